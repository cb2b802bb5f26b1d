"""Ack, renew and abandon honour leases: only a live lease, judged by the
clock read after the row lock, can be acked or renewed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import LockLost, PermanentError, RetryableError, TaskHub, now_ms
from tests.support.db import lease_remaining_ms, open_transaction, worker_lease_remaining_ms
from tests.support.server_clock import MoveClock

HubFactory = Callable[..., TaskHub]


def leased_instance(hub: TaskHub, instance: str, lock_ms: int) -> str:
    hub.enqueue_orchestrator_work(instance, start_orchestration(instance))
    item = hub.fetch_orchestration_item(lock_ms)
    assert item is not None and item.instance_id == instance
    return item.lock_token


@pytest.mark.pins_defect(
    "ack judges the lease by the caller's clock, so a lagging caller acks an expired lease",
    fails_on=("duroxide-0.2.2",),
)
def test_ack_of_an_expired_lease_is_refused_even_with_a_lagging_clock(
    flavour_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(flavour_schema)
    token = leased_instance(hub, "late-ack", lock_ms=500)
    time.sleep(0.7)  # past the 500 ms lease

    with pytest.raises(psycopg.Error, match="Invalid lock token"):
        sql.execute(
            f'SELECT "{flavour_schema}".ack_orchestration_item'
            "(%s, %s, 1, '[]', '[]', '[]', '{}')",
            [token, now_ms() - 5_000],
        )
    # The message is still there for the next turn.
    again = hub.fetch_orchestration_item(30_000)
    assert again is not None and again.instance_id == "late-ack"


@pytest.mark.pins_defect(
    "renew judges the lease by the caller's clock and revives an expired worker lease",
    fails_on=("duroxide-0.2.2",),
)
def test_renewing_an_expired_worker_lease_fails_even_with_a_lagging_clock(
    flavour_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(flavour_schema)
    hub.enqueue_worker_work(activity_execute("late-renew", 1))
    lease = hub.fetch_work_item(500)
    assert lease is not None
    time.sleep(0.7)  # past the 500 ms lease

    with pytest.raises(psycopg.Error, match="Lock token invalid, expired"):
        sql.execute(
            f'SELECT "{flavour_schema}".renew_work_item_lock(%s, %s, 30)',
            [lease.lock_token, now_ms() - 5_000],
        )


@pytest.mark.pins_defect(
    "renew judges the lease by the caller's clock and revives an expired orchestration lease",
    fails_on=("duroxide-0.2.2",),
)
def test_renewing_an_expired_orchestration_lease_fails_even_with_a_lagging_clock(
    flavour_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(flavour_schema)
    token = leased_instance(hub, "late-renew-orch", lock_ms=500)
    time.sleep(0.7)  # past the 500 ms lease

    with pytest.raises(psycopg.Error, match="Lock token invalid, expired"):
        sql.execute(
            f'SELECT "{flavour_schema}".renew_orchestration_item_lock(%s, %s, 30)',
            [token, now_ms() - 5_000],
        )


def test_ack_after_a_takeover_fails_and_the_new_holder_commits(
    hub: TaskHub, move_clock: MoveClock
) -> None:
    old_token = leased_instance(hub, "taken-over", lock_ms=300)
    move_clock(hub, 400)  # past the 300 ms lease
    new_item = hub.fetch_orchestration_item(30_000)
    assert new_item is not None and new_item.lock_token != old_token
    assert new_item.attempt_count == 2

    with pytest.raises(LockLost, match="Invalid lock token"):
        hub.ack_orchestration_item(
            old_token, 1, history_delta=[orchestration_started("taken-over")]
        )
    hub.ack_orchestration_item(
        new_item.lock_token,
        1,
        history_delta=[orchestration_started("taken-over")],
        metadata=metadata(),
    )
    assert [e["type"] for e in hub.read_history("taken-over")] == ["OrchestrationStarted"]


def test_renewal_extends_a_live_lease_with_millisecond_precision(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    token = leased_instance(hub, "renewed", lock_ms=1_000)
    new_end = hub.renew_orchestration_item_lock(token, 7_500)
    remaining = lease_remaining_ms(sql, hub_schema, token)
    assert remaining is not None and 7_000 < remaining <= 7_500
    assert abs(new_end - now_ms() - remaining) < 500

    hub.enqueue_worker_work(activity_execute("renewed", 1))
    lease = hub.fetch_work_item(1_000)
    assert lease is not None
    hub.renew_work_item_lock(lease.lock_token, 4_250)
    remaining = worker_lease_remaining_ms(sql, hub_schema, lease.lock_token)
    assert remaining is not None and 3_800 < remaining <= 4_250


def test_unknown_tokens_raise_lock_lost(hub: TaskHub) -> None:
    with pytest.raises(LockLost):
        hub.ack_orchestration_item("lock_unknown", 1)
    with pytest.raises(LockLost):
        hub.abandon_orchestration_item("lock_unknown")
    with pytest.raises(LockLost):
        hub.renew_orchestration_item_lock("lock_unknown", 1_000)
    with pytest.raises(LockLost):
        hub.ack_work_item("lock_unknown", None)
    with pytest.raises(LockLost):
        hub.abandon_work_item("lock_unknown")
    with pytest.raises(LockLost):
        hub.renew_work_item_lock("lock_unknown", 1_000)


def test_worker_ack_after_expiry_is_refused_and_the_item_comes_back(
    hub: TaskHub, move_clock: MoveClock
) -> None:
    hub.enqueue_worker_work(activity_execute("expired-worker", 1))
    lease = hub.fetch_work_item(300)
    assert lease is not None
    move_clock(hub, 400)  # past the 300 ms lease
    with pytest.raises(LockLost, match="not found or already processed"):
        hub.ack_work_item(lease.lock_token, activity_completed("expired-worker", 1))
    again = hub.fetch_work_item(30_000)
    assert again is not None and again.attempt_count == 2
    hub.ack_work_item(again.lock_token, activity_completed("expired-worker", 1))
    completion = hub.fetch_orchestration_item(30_000)
    assert completion is not None
    assert completion.messages == [activity_completed("expired-worker", 1)]


def test_abandon_with_delay_hides_the_messages_and_can_spare_the_attempt(
    hub: TaskHub, move_clock: MoveClock
) -> None:
    token = leased_instance(hub, "abandoned", lock_ms=30_000)
    assert hub.abandon_orchestration_item(token, delay_ms=400, ignore_attempt=True) == "abandoned"
    assert hub.fetch_orchestration_item(30_000) is None
    move_clock(hub, 500)  # past the 400 ms delay
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.attempt_count == 1


def test_bad_lease_arguments_are_refused_and_change_nothing(hub: TaskHub) -> None:
    token = leased_instance(hub, "bad-args", lock_ms=30_000)
    with pytest.raises(PermanentError, match="p_delay_ms must not be negative"):
        hub.abandon_orchestration_item(token, delay_ms=-1)
    with pytest.raises(PermanentError, match="p_extend_ms must be positive"):
        hub.renew_orchestration_item_lock(token, 0)
    with pytest.raises(PermanentError, match="p_lock_timeout_ms must be positive"):
        hub.fetch_orchestration_item(-5)
    with pytest.raises(PermanentError, match="ahead of the database clock"):
        hub.fetch_orchestration_item(1_000, caller_now_ms=now_ms() + 3_600_000)
    # The lease is untouched and still commits.
    hub.ack_orchestration_item(
        token, 1, history_delta=[orchestration_started("bad-args")], metadata=metadata()
    )


def test_lease_operations_never_wait_for_a_fetcher_taking_over(
    hub: TaskHub,
    hub_schema: str,
    database_url: str,
    move_clock: MoveClock,
) -> None:
    old_token = leased_instance(hub, "mid-takeover", lock_ms=300)
    hub.enqueue_worker_work(activity_execute("mid-takeover", 1))
    old_lease = hub.fetch_work_item(300)
    assert old_lease is not None
    move_clock(hub, 400)  # past the 300 ms leases

    with open_transaction(database_url) as competitor:
        # Another dispatcher and another worker take both expired leases over
        # and have not committed yet.
        taken = competitor.execute(
            f'SELECT out_instance_id FROM "{hub_schema}".fetch_orchestration_item(%s, 30000)',
            [now_ms()],
        ).fetchall()
        assert taken == [("mid-takeover",)]
        taken = competitor.execute(
            f'SELECT out_attempt_count FROM "{hub_schema}".fetch_work_item(%s, 30000)', [now_ms()]
        ).fetchall()
        assert taken == [(2,)]

        operations: list[Callable[[], object]] = [
            lambda: hub.ack_orchestration_item(old_token, 1),
            lambda: hub.renew_orchestration_item_lock(old_token, 1_000),
            lambda: hub.abandon_orchestration_item(old_token),
            lambda: hub.ack_work_item(old_lease.lock_token, None),
            lambda: hub.renew_work_item_lock(old_lease.lock_token, 1_000),
            lambda: hub.abandon_work_item(old_lease.lock_token),
        ]
        for operation in operations:
            started = time.monotonic()
            with pytest.raises(LockLost):
                operation()
            assert time.monotonic() - started < 0.5


def test_a_lease_busy_beyond_the_statement_timeout_is_a_retryable_error(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(hub_schema, statement_timeout_ms=300)
    token = leased_instance(hub, "busy-lease", lock_ms=30_000)
    with open_transaction(database_url) as holder:
        # Stands for the holder's own renewal still in flight.
        holder.execute(
            f'SELECT 1 FROM "{hub_schema}".instance_locks WHERE lock_token = %s FOR UPDATE',
            [token],
        )
        with pytest.raises(RetryableError, match="statement timeout"):
            hub.ack_orchestration_item(token, 1)
    hub.ack_orchestration_item(
        token, 1, history_delta=[orchestration_started("busy-lease")], metadata=metadata()
    )


LEASE_GONE = "No live lease holds this token"


@pytest.mark.pins_defect(
    "each procedure words its lease-lost detail its own way, or gives none",
    fails_on=("duroxide-0.2.2", "taskhub-0006"),
)
def test_every_lease_lost_error_says_why_in_the_same_words(
    flavour_schema: str, make_hub: HubFactory
) -> None:
    hub = make_hub(flavour_schema)
    unknown: list[Callable[[], object]] = [
        lambda: hub.ack_orchestration_item("lock_unknown", 1),
        lambda: hub.renew_orchestration_item_lock("lock_unknown", 1_000),
        lambda: hub.abandon_orchestration_item("lock_unknown"),
        lambda: hub.ack_work_item("lock_unknown", None),
        lambda: hub.renew_work_item_lock("lock_unknown", 1_000),
        lambda: hub.abandon_work_item("lock_unknown"),
    ]
    for operation in unknown:
        with pytest.raises(LockLost, match=LEASE_GONE):
            operation()

    orchestration_token = leased_instance(hub, "lapsed", 200)
    hub.enqueue_worker_work(activity_execute("lapsed", 1))
    worker = hub.fetch_work_item(200)
    assert worker is not None
    time.sleep(0.3)  # past both 200 ms leases
    expired: list[Callable[[], object]] = [
        lambda: hub.ack_orchestration_item(orchestration_token, 1),
        lambda: hub.renew_orchestration_item_lock(orchestration_token, 1_000),
        lambda: hub.ack_work_item(worker.lock_token, None),
        lambda: hub.renew_work_item_lock(worker.lock_token, 1_000),
    ]
    for operation in expired:
        with pytest.raises(LockLost, match=r"The lease expired \d+ ms ago"):
            operation()
