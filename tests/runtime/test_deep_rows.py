"""Rows nested deeper than the runtime decodes, planted by hand, with the
released duroxide 0.2.2 runtime: each instance whose history holds one is
poisoned by the runtime, a message holding one goes to dead_letters, and
every other instance completes.

Before revision 0024 a row the server could parse was handed over as it
was: the runtime failed every fetch of that instance (a decode error, not a
history error) and never poisoned it; the instance stayed Running until
dead_letters took its messages.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.waiting import wait_until
from devkit.workloads.flavours import TASKHUB_TEXT_HISTORY
from devkit.workloads.work_items import external_raised, orchestration_started
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.deep_json import TOO_DEEP, deepened
from tests.support.planted_rows import planted

WAIT_S = 60.0
GOOD = [f"good-{n}" for n in range(6)]
# A delivery the runtime cannot decode comes back when its lease ends: short
# leases, and a low dead-letter cap, keep the test short.
LEASE_MS = 1_000
DEAD_LETTER_AFTER = 3


# A hub at head that existed before 0029: it stores its history as text, so
# every depth can be planted there.
TEXT_HISTORY = "text-history"


@dataclass
class Outcome:
    schema: str
    statuses: dict[str, tuple[str, str | None]]
    dead_letters: set[str]
    refused: set[str]  # rows a history stored as json refused: they cannot exist


def plant(sql: psycopg.Connection[Any], schema: str) -> set[str]:
    """For each depth, an instance whose first event is that deep, and one
    whose waiting message is; the instances whose row the hub refused."""
    refused = set()
    for depth in TOO_DEEP:
        for where, row in (
            ("history", orchestration_started(f"history-{depth}", name="Waiter")),
            ("message", external_raised(f"message-{depth}", name="Go")),
        ):
            instance = f"{where}-{depth}"
            if not planted(sql, schema, where, deepened(row, depth), instance):
                refused.add(instance)
    return refused


def statuses(sql: psycopg.Connection[Any], schema: str) -> dict[str, tuple[str, str | None]]:
    rows = sql.execute(f'SELECT instance_id, status, output FROM "{schema}".executions').fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def dead_letters(sql: psycopg.Connection[Any], schema: str) -> set[str]:
    rows = sql.execute(f'SELECT DISTINCT instance_id FROM "{schema}".dead_letters').fetchall()
    return {row[0] for row in rows}


def settled(sql: psycopg.Connection[Any], schema: str, refused: set[str]) -> bool:
    """Every other instance completed, and every planted row dealt with: its
    instance ended, or its message handed out until dead_letters took it
    (where the runtime never poisoned the instance, that is how it ends)."""
    now = statuses(sql, schema)
    buried = dead_letters(sql, schema)
    rows = [f"{where}-{depth}" for where in ("history", "message") for depth in TOO_DEEP]
    return (
        all(now[good][0] == "Completed" for good in GOOD if good in now)
        and all(
            now[instance][0] != "Running" or instance in buried
            for instance in rows
            if instance not in refused
        )
        and all(good in now for good in GOOD)
    )


def run_released_runtime(database_url: str, revision: str) -> Outcome:
    """The released runtime run on a hub at `revision` with every row
    planted, until all is dealt with."""
    schema = new_schema_name("deep")
    if revision == TEXT_HISTORY:
        TASKHUB_TEXT_HISTORY.create_schema(database_url, schema)
    else:
        migrate.upgrade(database_url, schema, revision)
    with psycopg.connect(database_url, autocommit=True) as sql:
        sql.execute(
            f'UPDATE "{schema}".taskhub_settings SET value = %s'
            " WHERE name = 'dead_letter_after_attempts'",
            [str(DEAD_LETTER_AFTER)],
        )
        refused = plant(sql, schema)
        provider = duroxide.PostgresProvider.connect_with_schema(database_url, schema)
        runtime: Any = duroxide.Runtime(
            provider,
            duroxide.RuntimeOptions(
                dispatcher_poll_interval_ms=10,
                max_attempts=2,
                orchestrator_lock_timeout_ms=LEASE_MS,
            ),
        )

        @runtime.register_orchestration("Waiter")
        def waiter(ctx: Any, _: Any) -> Any:
            value = yield ctx.wait_for_event("Go")
            return value

        @runtime.register_orchestration("Echo")
        def echo(ctx: Any, value: Any) -> Any:
            timer = yield ctx.schedule_timer(1)
            return [value, timer is None]

        runtime.start()
        try:
            client = duroxide.Client(provider)
            for good in GOOD:
                client.start_orchestration(good, "Echo", good)
            wait_until(
                lambda: settled(sql, schema, refused),
                timeout_s=WAIT_S,
                message="every planted row dealt with and every other instance completed",
            )
            return Outcome(schema, statuses(sql, schema), dead_letters(sql, schema), refused)
        finally:
            runtime.shutdown(timeout_ms=2_000)


@pytest.fixture(scope="module")
def outcome_at(database_url: str) -> Callable[[str], Outcome]:
    """The outcome on a hub at a revision, run once per module and revision."""
    found: dict[str, Outcome] = {}

    def at(revision: str) -> Outcome:
        if revision not in found:
            found[revision] = run_released_runtime(database_url, revision)
        return found[revision]

    return at


# The revision of the head this issue was filed against: it handed over, as
# they were, the rows its parser could read (up to about 15,000 deep).
FILED_AGAINST = "0023"
BOTH = ["head", TEXT_HISTORY, FILED_AGAINST]


@pytest.mark.parametrize(
    ("revision", "depth"),
    [
        pytest.param(revision, depth, id=f"{revision}-{depth}")
        for revision in ("head", TEXT_HISTORY)
        for depth in TOO_DEEP
    ]
    + [
        pytest.param(
            FILED_AGAINST,
            depth,
            id=f"{FILED_AGAINST}-{depth}",
            marks=pytest.mark.xfail(strict=True, reason="its fetch failed in the runtime"),
        )
        for depth in TOO_DEEP
        if depth < 20_000
    ],
)
def test_an_instance_whose_history_is_too_deep_is_poisoned(
    outcome_at: Callable[[str], Outcome], revision: str, depth: int
) -> None:
    outcome = outcome_at(revision)
    if f"history-{depth}" in outcome.refused:
        # A history stored as json refuses a row deeper than the server's
        # stack takes: it cannot be there to poison anything.
        assert revision == "head" and depth > 500
        return
    status, output = outcome.statuses[f"history-{depth}"]
    assert status == "Failed"
    assert output is not None and "poison" in output and "deserializ" in output, output


@pytest.mark.parametrize("revision", BOTH)
@pytest.mark.parametrize("depth", TOO_DEEP)
def test_a_message_too_deep_goes_to_dead_letters(
    outcome_at: Callable[[str], Outcome], revision: str, depth: int
) -> None:
    assert f"message-{depth}" in outcome_at(revision).dead_letters


@pytest.mark.parametrize("revision", BOTH)
def test_every_other_instance_completes(
    outcome_at: Callable[[str], Outcome], revision: str
) -> None:
    outcome = outcome_at(revision)
    completed = [good for good in GOOD if outcome.statuses[good][0] == "Completed"]
    assert completed == GOOD
    assert json.loads(str(outcome.statuses[GOOD[0]][1]))[0] == GOOD[0]
