"""Port of duroxide's provider validation suite, §3.15 poison_message (9 tests).

Attempt counts, which the runtime uses to detect poison messages: each fetch
of a message counts an attempt; abandon with ignore_attempt undoes one.
The catalogue names these tests without the `test_` prefix; pytest needs it.
"""

from __future__ import annotations

from provider import ExecutionMetadata, TaskHub, WorkItemLease
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LT,
    activity_completed,
    activity_execute,
    fetch_o,
    start_orchestration,
)


def fetch_w(provider: TaskHub, lock_ms: int = LT) -> WorkItemLease:
    """fetchW that must return an item."""
    lease = provider.fetch_work_item(lock_ms)
    assert lease is not None, "expected a worker item"
    return lease


def test_orchestration_attempt_count_starts_at_one(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration("poison-test-1"))
    item = fetch_o(provider, LT)
    assert item.attempt_count == 1
    provider.ack_orchestration_item(item.lock_token, 1, metadata=ExecutionMetadata())


def test_orchestration_attempt_count_increments_on_refetch(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration("poison-test-2"))
    first = fetch_o(provider, LT)
    assert first.attempt_count == 1
    provider.abandon_orchestration_item(first.lock_token, ignore_attempt=False)

    second = fetch_o(provider, LT)
    assert second.attempt_count == 2
    provider.abandon_orchestration_item(second.lock_token, ignore_attempt=False)

    third = fetch_o(provider, LT)
    assert third.attempt_count == 3
    provider.ack_orchestration_item(third.lock_token, 1, metadata=ExecutionMetadata())


def test_worker_attempt_count_starts_at_one(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("poison-test-3", 1, name="TestActivity"))
    lease = fetch_w(provider)
    assert lease.attempt_count == 1
    provider.ack_work_item(lease.lock_token, activity_completed("poison-test-3", 1, "done"))
    assert "ActivityExecute" in lease.work_item


def test_worker_attempt_count_increments_on_lock_expiry(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    provider.enqueue_worker_work(activity_execute("poison-test-4", 1, name="TestActivity"))
    first = fetch_w(provider, 1_000)
    assert first.attempt_count == 1
    move_clock(provider, 1100)  # past the 1 s lease

    second = fetch_w(provider, 1_000)
    assert second.attempt_count == 2, "a lapsed lease counts as an attempt"
    provider.ack_work_item(second.lock_token, activity_completed("poison-test-4", 1, "done"))


def test_attempt_count_is_per_message(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("poison-test-5a", 1, name="Activity1"))
    provider.enqueue_worker_work(activity_execute("poison-test-5b", 2, name="Activity2"))

    first = fetch_w(provider)
    assert first.attempt_count == 1
    second = fetch_w(provider)
    assert second.attempt_count == 1
    first_id = first.work_item["ActivityExecute"]["id"]
    second_id = second.work_item["ActivityExecute"]["id"]
    assert first_id != second_id

    provider.ack_work_item(first.lock_token, activity_completed("poison-test-5a", first_id, "done"))
    provider.ack_work_item(
        second.lock_token, activity_completed("poison-test-5b", second_id, "done")
    )


def test_abandon_work_item_ignore_attempt_decrements(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("poison-test-ignore-1", 1, name="TestActivity"))
    first = fetch_w(provider)
    assert first.attempt_count == 1
    provider.abandon_work_item(first.lock_token, ignore_attempt=False)

    second = fetch_w(provider)
    assert second.attempt_count == 2
    provider.abandon_work_item(second.lock_token, ignore_attempt=True)

    third = fetch_w(provider)
    assert third.attempt_count == 2, "decremented to 1 by the abandon, then counted again"
    provider.ack_work_item(third.lock_token, activity_completed("poison-test-ignore-1", 1, "done"))


def test_abandon_orchestration_item_ignore_attempt_decrements(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration("poison-test-ignore-2"))
    first = fetch_o(provider, LT)
    assert first.attempt_count == 1
    provider.abandon_orchestration_item(first.lock_token, ignore_attempt=False)

    second = fetch_o(provider, LT)
    assert second.attempt_count == 2
    provider.abandon_orchestration_item(second.lock_token, ignore_attempt=True)

    third = fetch_o(provider, LT)
    assert third.attempt_count == 2, "decremented to 1 by the abandon, then counted again"
    provider.ack_orchestration_item(third.lock_token, 1, metadata=ExecutionMetadata())


def test_ignore_attempt_never_goes_negative(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("poison-test-ignore-3", 1, name="TestActivity"))
    first = fetch_w(provider)
    assert first.attempt_count == 1
    provider.abandon_work_item(first.lock_token, ignore_attempt=True)

    second = fetch_w(provider)
    assert second.attempt_count == 1
    provider.abandon_work_item(second.lock_token, ignore_attempt=True)

    third = fetch_w(provider)
    assert third.attempt_count == 1, "the count never drops below zero before a fetch"
    provider.ack_work_item(third.lock_token, activity_completed("poison-test-ignore-3", 1, "done"))


def test_max_attempt_count_across_message_batch(provider: TaskHub) -> None:
    """A batch's attempt count is the largest attempt count of its messages."""
    instance = "poison-batch-test"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    first = fetch_o(provider, LT)
    assert first.attempt_count == 1
    assert len(first.messages) == 1
    provider.abandon_orchestration_item(first.lock_token, ignore_attempt=False)

    second = fetch_o(provider, LT)
    assert second.attempt_count == 2
    # Arrives while the instance is locked; not part of this batch.
    provider.enqueue_for_orchestrator(activity_completed(instance, 1, "result"))
    provider.abandon_orchestration_item(second.lock_token, ignore_attempt=False)

    third = fetch_o(provider, LT)
    assert len(third.messages) == 2
    assert third.attempt_count == 3, "max(3, 1) over the batch"
    provider.ack_orchestration_item(third.lock_token, 1, metadata=ExecutionMetadata())
