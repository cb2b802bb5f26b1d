"""duroxide provider validation suite, §3.11 lock_expiration.

Leases end when they expire, on ack, or on abandon; an expired or released
lease can be neither renewed nor acked. LT is the suite's 1 s lock timeout.
Time passes by the hub's test clock (move_clock), not by sleeping.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from provider import ExecutionMetadata, TaskHub, TaskHubError
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LONG_LOCK,
    LT,
    activity_completed,
    activity_execute,
    fetch_o,
    start_orchestration,
    started,
)

INSTANCE = "instance-A"


def activity(instance: str) -> dict[str, Any]:
    """The suite's ActivityExecute: id 1, name TestActivity."""
    return activity_execute(instance, 1, name="TestActivity")


def test_lock_expires_after_timeout(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    first = fetch_o(provider, LT)
    assert provider.fetch_orchestration_item(LT) is None

    move_clock(provider, LT + 100)
    second = fetch_o(provider, LT)
    assert second.instance_id == INSTANCE
    assert second.lock_token != first.lock_token

    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item(first.lock_token, 1, metadata=ExecutionMetadata())


def test_abandon_releases_lock_immediately(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider, LT)
    assert provider.fetch_orchestration_item(LT) is None

    provider.abandon_orchestration_item(item.lock_token, delay_ms=None, ignore_attempt=False)
    assert fetch_o(provider, LT).instance_id == INSTANCE


def test_lock_renewal_on_ack(provider: TaskHub) -> None:
    """Despite its name: a successful ack releases the lease at once."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider, LT)
    assert provider.fetch_orchestration_item(LT) is None

    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    assert provider.fetch_orchestration_item(LT) is None

    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
    )
    assert fetch_o(provider, LT).instance_id == INSTANCE


def test_concurrent_lock_attempts_respect_expiration(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    fetch_o(provider, LT)

    def attempt(_: int) -> bool:
        return provider.fetch_orchestration_item(LT) is not None

    # Five fetches at once while the lease holds (the Rust suite staggers
    # them by 50 ms; at once they overlap more): none gets the instance.
    with ThreadPoolExecutor(max_workers=5) as pool:
        assert not any(pool.map(attempt, range(5)))

    move_clock(provider, LT + 100)
    assert fetch_o(provider, LT).instance_id == INSTANCE


def test_worker_lock_renewal_success(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_worker_work(activity("test-instance"))
    lease = provider.fetch_work_item(LT)
    assert lease is not None
    assert provider.fetch_work_item(LT) is None

    move_clock(provider, 100)
    provider.renew_work_item_lock(lease.lock_token, LT)
    assert provider.fetch_work_item(LT) is None


def test_worker_lock_renewal_invalid_token(provider: TaskHub) -> None:
    with pytest.raises(TaskHubError):
        provider.renew_work_item_lock("invalid-token-123", 30_000)


def test_worker_lock_renewal_after_expiration(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_worker_work(activity("test-instance"))
    lease = provider.fetch_work_item(1_000)
    assert lease is not None

    move_clock(provider, LT + 100)
    with pytest.raises(TaskHubError):
        provider.renew_work_item_lock(lease.lock_token, LT)


def test_worker_lock_renewal_extends_timeout(provider: TaskHub, move_clock: MoveClock) -> None:
    instance = "test-lock-renewal-extends"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider, LONG_LOCK)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance)],
        worker_items=[activity(instance)],
        metadata=ExecutionMetadata(orchestration_name="TestOrch", status="Running"),
    )

    lease = provider.fetch_work_item(LT)
    assert lease is not None
    move_clock(provider, round(0.6 * LT))
    # Renewed at 0.6 LT for LT: the lease now lasts until about 1.6 LT.
    provider.renew_work_item_lock(lease.lock_token, LT)
    move_clock(provider, round(0.4 * LT))
    assert provider.fetch_work_item(LT) is None, "the renewed lease should still hold at 1.0 LT"


def test_worker_lock_renewal_after_ack(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity("test-instance"))
    lease = provider.fetch_work_item(LT)
    assert lease is not None
    provider.ack_work_item(lease.lock_token, activity_completed("test-instance", 1, "done"))

    with pytest.raises(TaskHubError):
        provider.renew_work_item_lock(lease.lock_token, LT)


def test_abandon_work_item_releases_lock(provider: TaskHub) -> None:
    instance = "test-abandon-work"
    provider.enqueue_worker_work(activity(instance))
    lease = provider.fetch_work_item(LT)
    assert lease is not None
    assert "ActivityExecute" in lease.work_item
    assert provider.fetch_work_item(LT) is None

    provider.abandon_work_item(lease.lock_token, delay_ms=None, ignore_attempt=False)
    again = provider.fetch_work_item(LT)
    assert again is not None
    assert "ActivityExecute" in again.work_item
    assert again.lock_token != lease.lock_token
    provider.ack_work_item(again.lock_token, activity_completed(instance, 1, "done"))


def test_abandon_work_item_with_delay(provider: TaskHub, move_clock: MoveClock) -> None:
    instance = "test-abandon-delay"
    provider.enqueue_worker_work(activity(instance))
    lease = provider.fetch_work_item(LT)
    assert lease is not None

    provider.abandon_work_item(lease.lock_token, delay_ms=500, ignore_attempt=False)
    assert provider.fetch_work_item(LT) is None, "the item should stay invisible for 500 ms"

    move_clock(provider, 600)
    again = provider.fetch_work_item(LT)
    assert again is not None
    assert "ActivityExecute" in again.work_item
    provider.ack_work_item(again.lock_token, activity_completed(instance, 1, "done"))


def test_worker_ack_fails_after_lock_expiry(provider: TaskHub, move_clock: MoveClock) -> None:
    """An ack of an expired lease fails even if nobody took the item over; the item stays."""
    instance = "ack-expiry-test"
    provider.enqueue_worker_work(activity(instance))
    lease = provider.fetch_work_item(1_000)
    assert lease is not None

    move_clock(provider, 1_200)
    with pytest.raises(TaskHubError):
        provider.ack_work_item(lease.lock_token, activity_completed(instance, 1, "done"))
    assert provider.fetch_work_item(5_000) is not None


def test_orchestration_lock_renewal_after_expiration(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    provider.enqueue_for_orchestrator(start_orchestration("orch-renewal-expiry"))
    item = fetch_o(provider, LT)

    move_clock(provider, LT + 100)
    with pytest.raises(TaskHubError):
        provider.renew_orchestration_item_lock(item.lock_token, LT)
