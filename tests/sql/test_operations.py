"""Operations: dead letters end every endless loop, the psql runbook in
docs/ops.md answers what is stuck, who holds it, since when and how to
release it, and the worker's logs tie a poison decision to its failed ack."""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import (
    activity_execute,
    start_orchestration,
)
from provider import ActivityWorker, TagFilter, TaskHub
from provider.cli import main
from provider.worker.activity_item import ActivityItem
from tests.support.busy_hub import set_cap
from tests.support.paths import REPO

RUNBOOK = REPO / "docs" / "ops.md"
RUNBOOK_ROLES = ("hub_runtime", "hub_operator")


def dead_letters(sql: psycopg.Connection[Any], schema: str) -> list[tuple[Any, ...]]:
    return sql.execute(
        f'SELECT source_queue, instance_id, attempt_count, reason FROM "{schema}".dead_letters'
    ).fetchall()


def test_an_orchestration_message_never_acked_ends_in_dead_letters(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    set_cap(sql, hub_schema, 5)
    hub.enqueue_orchestrator_work("looping", start_orchestration("looping"))
    # The seed report's loop: every turn's ack fails, the message comes back.
    for attempt in range(1, 6):
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None and item.attempt_count == attempt
        hub.abandon_orchestration_item(item.lock_token)
    assert hub.fetch_orchestration_item(30_000) is None
    ((queue, instance, attempts, reason),) = dead_letters(sql, hub_schema)
    assert (queue, instance, attempts) == ("orchestrator", "looping", 5)
    assert "handed out 5 times" in reason


def test_a_worker_item_never_acked_ends_in_dead_letters_and_can_be_requeued(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    set_cap(sql, hub_schema, 3)
    hub.enqueue_worker_work(activity_execute("looping", 4, session_id="s", tag="gpu"))
    for _ in range(3):
        lease = hub.fetch_work_item(30_000, owner_id="w", tags=TagFilter.any())
        assert lease is not None
        hub.abandon_work_item(lease.lock_token)
    assert hub.fetch_work_item(30_000, owner_id="w", tags=TagFilter.any()) is None
    assert [row[:3] for row in dead_letters(sql, hub_schema)] == [("worker", "looping", 3)]

    row = sql.execute(
        f'SELECT "{hub_schema}".taskhub_requeue_dead_letter(id) FROM "{hub_schema}".dead_letters'
    ).fetchone()
    assert row is not None
    again = hub.fetch_work_item(30_000, owner_id="w", tags=TagFilter.any())
    assert again is not None and again.attempt_count == 1
    assert again.work_item["ActivityExecute"]["tag"] == "gpu"
    assert dead_letters(sql, hub_schema) == []


# The runbook's role steps are taskhub-pg verbs in its sh blocks.
ROLE_VERB = re.compile(r"^taskhub-pg (?:grant|revoke)-(?:runtime|operator)-role .*$", flags=re.M)


def runbook_steps() -> list[tuple[str, str]]:
    """The runbook's psql queries ("sql") and role verbs ("verb"), in its order."""
    steps = []
    for language, body in re.findall(r"```(sql|sh)\n(.*?)```", RUNBOOK.read_text(), flags=re.S):
        if language == "sql":
            steps.append(("sql", body))
        else:
            steps += [("verb", line) for line in ROLE_VERB.findall(body)]
    return steps


@pytest.fixture
def runbook_roles(sql: psycopg.Connection[Any]) -> Iterator[None]:
    """The runbook creates the roles it names; roles are server-wide, so they
    are dropped afterwards: only when this test created them (on a server
    that already has a role of that name, the test skips rather than take it)."""
    taken = sql.execute(
        "SELECT string_agg(rolname, ', ') FROM pg_roles WHERE rolname = ANY(%s)",
        [list(RUNBOOK_ROLES)],
    ).fetchone()
    if taken is not None and taken[0] is not None:
        pytest.skip(f"this server already has the runbook's role(s) {taken[0]}: not ours to drop")
    yield
    # None of them existed before the test: whichever exists now, it made
    # (a test that failed half-way made only some).
    made = sql.execute(
        "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", [list(RUNBOOK_ROLES)]
    ).fetchall()
    for (role,) in made:
        sql.execute(f"DROP OWNED BY {role}")
        sql.execute(f"DROP ROLE {role}")


def test_every_runbook_query_runs_and_answers(
    busy_hub: str, sql: psycopg.Connection[Any], runbook_roles: None, database_url: str
) -> None:
    steps = runbook_steps()
    assert len([step for step in steps if step[0] == "sql"]) >= 15
    answers: dict[str, list[tuple[Any, ...]]] = {}
    for kind, step in steps:
        if kind == "verb":
            argv = shlex.split(step.split("#")[0].replace("orders", busy_hub))[1:]
            answers[step] = [(main([*argv, "--url", database_url]),)]
            continue
        cur = sql.execute(re.sub(r"\borders\b", f'"{busy_hub}"', step))
        answers[step] = cur.fetchall() if cur.description else []

    def answer(fragment: str) -> list[tuple[Any, ...]]:
        (rows,) = [rows for query, rows in answers.items() if fragment in query]
        return rows

    health = {row[0]: row for row in answer("taskhub_queue_health")}
    assert set(health) == {"orchestrator", "worker"} and health["orchestrator"][6] == 1
    assert any(row[2] == "hot" and row[3] == 42 for row in answer("taskhub_poison_candidates"))
    assert [row[0] for row in answer("taskhub_stuck_instances")] == ["quiet"]
    leases = answer("taskhub_current_leases")
    assert {(row[0], row[1]) for row in leases} == {
        ("orchestration", "leased-instance"),
        ("activity", "leased-instance"),
    }
    assert all(row[5] > 0 for row in leases)
    assert [row[:2] for row in answer("taskhub_session_owners")] == [("sess-1", "worker-a")]
    assert answer("taskhub_wakeup_listeners") == []  # no worker listens in this test
    # The runbook requeued the dead letter and released the lease.
    assert answer("SELECT orders.taskhub_requeue_dead_letter(")[0][0] is not None
    assert answer("SELECT orders.taskhub_release_orchestration_lease(") == [(True,)]
    left = sql.execute(f'SELECT count(*) FROM "{busy_hub}".instance_locks').fetchone()
    assert left == (0,)

    privileges = answer("FROM orders.taskhub_runtime_privileges")
    assert ("table", "instances", "SELECT") in [row[:3] for row in privileges]
    assert [row[:2] for row in answer("role_name, runtime_ddl")] == [("hub_runtime", "guarded")]
    assert {row[0] for row in answer("has_table_privilege")} == {
        "instances",
        "executions",
        "_duroxide_migrations",
    }
    # The guard's step and the owner's (docs/ops.md, "The superuser's steps").
    role_steps = [
        rows for query, rows in answers.items() if re.search(r"(grant|revoke)-runtime-role", query)
    ]
    assert len(role_steps) >= 3 and all(rows == [(0,)] for rows in role_steps)
    assert [row[0] for row in answer("FROM orders.taskhub_operator_roles")] == ["hub_operator"]
    granted = answer("FROM orders.taskhub_operator_privileges")
    assert ("table", "taskhub_settings", "UPDATE", ["value"]) in [row[:4] for row in granted]
    # The runbook's last step takes it all back.
    assert answer("grant-operator-role") == answer("revoke-operator-role") == [(0,)]
    operator = sql.execute(
        "SELECT has_table_privilege('hub_operator', %s, 'SELECT'),"
        " has_table_privilege('hub_operator', %s, 'DELETE')",
        [f'"{busy_hub}".dead_letters', f'"{busy_hub}".dead_letters'],
    ).fetchone()
    assert operator == (False, False)


def test_poison_decision_and_failed_ack_carry_the_same_ids(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    hub.enqueue_worker_work(activity_execute("poisoned", 9, name="Explode"))
    sql.execute(f'UPDATE "{hub_schema}".worker_queue SET attempt_count = 5')
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    # The item is taken away (cancelled) before the worker acks its failure.
    sql.execute(f'DELETE FROM "{hub_schema}".worker_queue')
    worker = ActivityWorker(hub, max_attempts=3)
    with caplog.at_level(logging.INFO, logger="provider.worker.activity_worker"):
        worker._process(ActivityItem.fetched(lease))
    records = [r for r in caplog.records if getattr(r, "lock_token", None) == lease.lock_token]
    assert len(records) == 2
    assert {getattr(r, "instance_id", None) for r in records} == {"poisoned"}
    assert "poison" in records[0].getMessage() and "ack" in records[1].getMessage()
    events = [getattr(r, "event", None) for r in records]
    assert events == ["worker.poison", "worker.ack_refused"]
