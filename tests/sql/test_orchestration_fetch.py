"""fetch_orchestration_item: leases are valid when returned, fetchers never wait
for each other, candidates are spread, and every call is bounded.

Each test runs on our schema and on a schema created by duroxide 0.2.2; the
ones pinning a defect of 0.2.2 must fail there (strict xfail).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import metadata, orchestration_started, start_orchestration
from provider import TaskHub, now_ms
from tests.support.db import lease_remaining_ms, open_transaction
from tests.support.flavours import Flavour

HubFactory = Callable[..., TaskHub]
FAST_FAIL = {"statement_timeout_ms": 2_000}


def enqueue_start(hub: TaskHub, instance: str, age_s: float = 0) -> None:
    visible_at = datetime.now(UTC) - timedelta(seconds=age_s)
    hub.enqueue_orchestrator_work(instance, start_orchestration(instance), visible_at=visible_at)


def claim_in_open_transaction(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """Run a fetch the way a competing dispatcher does, without committing it."""
    row = conn.execute(
        f'SELECT out_instance_id FROM "{schema}".fetch_orchestration_item(%s, 30000)', [now_ms()]
    ).fetchone()
    return None if row is None else str(row[0])


@pytest.mark.pins_defect(
    "lease computed from the caller's clock (seed report, reproduction A)",
    fails_on=("taskhub-caller-clock",),
)
def test_stale_caller_clock_still_gets_a_full_lease(
    flavour_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    # Stands for a fetch that waited 10 s before writing its lease, with a 5 s
    # lock timeout. (duroxide 0.2.2 passes: its migration 25 fixed this part.)
    hub = make_hub(flavour_schema)
    enqueue_start(hub, "stale-clock", age_s=60)

    item = hub.fetch_orchestration_item(5_000, caller_now_ms=now_ms() - 10_000)

    assert item is not None
    remaining = lease_remaining_ms(sql, flavour_schema, item.lock_token)
    assert remaining is not None and 4_000 < remaining <= 5_000
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[orchestration_started("stale-clock")],
        metadata=metadata(),
    )


@pytest.mark.pins_defect(
    "blocking advisory lock on a deterministic candidate (seed report, defect 1)",
    fails_on=("duroxide-0.2.2",),
)
def test_fetch_skips_an_instance_another_fetcher_is_claiming(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema, **FAST_FAIL)
    enqueue_start(hub, "oldest", age_s=10)
    enqueue_start(hub, "next", age_s=5)

    with open_transaction(database_url) as competitor:
        assert claim_in_open_transaction(competitor, flavour_schema) == "oldest"
        started = time.monotonic()
        item = hub.fetch_orchestration_item(30_000)
        waited = time.monotonic() - started

    assert item is not None and item.instance_id == "next"
    assert waited < 0.5


@pytest.mark.pins_defect(
    "unbounded retry loop spins on a row-locked candidate (seed report, defect 3)",
    fails_on=("duroxide-0.2.2",),
)
def test_fetch_skips_an_instance_whose_messages_are_row_locked(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema, **FAST_FAIL)
    enqueue_start(hub, "row-locked", age_s=10)
    enqueue_start(hub, "free", age_s=5)

    with open_transaction(database_url) as holder:
        holder.execute(
            f'SELECT id FROM "{flavour_schema}".orchestrator_queue '
            "WHERE instance_id = 'row-locked' FOR UPDATE"
        )
        started = time.monotonic()
        item = hub.fetch_orchestration_item(30_000)
        waited = time.monotonic() - started
        assert item is not None and item.instance_id == "free"
        assert waited < 0.5

    # Once released, the skipped instance is served with its lease intact.
    again = hub.fetch_orchestration_item(30_000)
    assert again is not None and again.instance_id == "row-locked"
    assert again.attempt_count == 1


@pytest.mark.pins_defect(
    "fetch retries without bound (seed report, defect 3)", fails_on=("duroxide-0.2.2",)
)
def test_fetch_returns_empty_at_once_when_every_candidate_is_contended(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema, **FAST_FAIL)
    for n in range(20):
        enqueue_start(hub, f"busy-{n:02}", age_s=20 - n)

    with open_transaction(database_url) as holder:
        holder.execute(f'SELECT id FROM "{flavour_schema}".orchestrator_queue FOR UPDATE')
        started = time.monotonic()
        item = hub.fetch_orchestration_item(30_000)
        waited = time.monotonic() - started

    assert item is None
    assert waited < 0.5


@pytest.mark.pins_defect(
    "fetchers serialise on one candidate (seed report, defect 1)", fails_on=("duroxide-0.2.2",)
)
def test_concurrent_uncommitted_fetchers_each_get_a_different_instance(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema)
    for n in range(12):
        enqueue_start(hub, f"inst-{n:02}", age_s=20 - n)

    claimed: list[str | None] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)
    done = threading.Barrier(9)

    def dispatcher() -> None:
        try:
            with open_transaction(database_url) as conn:
                conn.execute("SET statement_timeout = 2000")
                barrier.wait()
                claimed.append(claim_in_open_transaction(conn, flavour_schema))
                done.wait(timeout=10)  # hold the claim until every dispatcher has one
        except BaseException as error:
            errors.append(error)
            done.abort()

    threads = [threading.Thread(target=dispatcher) for _ in range(8)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        done.wait(timeout=10)
    for thread in threads:
        thread.join()

    assert not errors
    assert len(claimed) == 8 and None not in claimed
    assert len(set(claimed)) == 8


def test_idle_hub_serves_the_oldest_message_first(
    flavour_schema: str, make_hub: HubFactory
) -> None:
    hub = make_hub(flavour_schema)
    for n in range(5):
        enqueue_start(hub, f"fifo-{n}", age_s=10 - n)

    served = []
    for _ in range(5):
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        served.append(item.instance_id)
    assert served == [f"fifo-{n}" for n in range(5)]
    assert hub.fetch_orchestration_item(30_000) is None


def test_contended_fetches_spread_over_the_other_candidates(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(hub_schema)
    for n in range(8):
        enqueue_start(hub, f"spread-{n}", age_s=10 - n)

    picks = set()
    with open_transaction(database_url) as competitor:
        assert claim_in_open_transaction(competitor, hub_schema) == "spread-0"
        for _ in range(20):
            with open_transaction(database_url) as trial:
                picked = claim_in_open_transaction(trial, hub_schema)
                assert picked is not None and picked != "spread-0"
                picks.add(picked)
    # Random among the 7 others: all 20 trials landing on one is ~1e-16 likely.
    assert len(picks) > 1


@pytest.mark.pins_defect(
    "advisory keys hash only the instance id, so task hubs in one database contend",
    fails_on=("duroxide-0.2.2",),
)
def test_instance_lock_keys_are_scoped_to_the_schema(
    flavour: Flavour,
    new_flavour_schema: Callable[[Flavour], str],
    database_url: str,
    make_hub: HubFactory,
) -> None:
    schemas = [new_flavour_schema(flavour) for _ in range(2)]
    for schema in schemas:
        enqueue_start(make_hub(schema), "same-id")

    other = make_hub(schemas[1], **FAST_FAIL)
    with open_transaction(database_url) as competitor:
        assert claim_in_open_transaction(competitor, schemas[0]) == "same-id"
        # Scoped keys: the other schema's same id is not held, so the fetch
        # takes it (a shared key would make it skip the instance: None).
        item = other.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "same-id"


def test_fetch_skips_an_instance_whose_advisory_key_is_held(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(hub_schema, **FAST_FAIL)
    enqueue_start(hub, "keyed", age_s=10)
    enqueue_start(hub, "unkeyed", age_s=5)

    with open_transaction(database_url) as holder:
        holder.execute(
            f'SELECT pg_advisory_xact_lock("{hub_schema}".taskhub_instance_lock_key(%s))',
            ["keyed"],
        )
        item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "unkeyed"
