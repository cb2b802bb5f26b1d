"""duroxide provider validation suite, §3.17 queue_semantics.

Peek-lock queues: FIFO order, visibility delays, redelivery after a lost
lease, and orphan mailbox messages being dropped rather than refetched.
"""

from __future__ import annotations

from typing import Any

from provider import ExecutionMetadata, TaskHub, WorkItemLease
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LONG_LOCK,
    LT,
    PAST_LT_MS,
    activity_completed,
    activity_execute,
    create_instance,
    fetch_o,
    queue_message,
    start_orchestration,
    started,
    timer_fired,
)

INSTANCE = "instance-A"


def fetch_w(provider: TaskHub, lock_ms: int = LONG_LOCK) -> WorkItemLease:
    """fetchW that must return an item."""
    lease = provider.fetch_work_item(lock_ms)
    assert lease is not None, "expected a worker item"
    return lease


def activity(lease: WorkItemLease) -> dict[str, Any]:
    body: dict[str, Any] = lease.work_item["ActivityExecute"]
    return body


def test_worker_queue_fifo_ordering(provider: TaskHub) -> None:
    for i in range(5):
        provider.enqueue_worker_work(activity_execute(INSTANCE, i, name=f"Activity{i}"))
    for i in range(5):
        body = activity(fetch_w(provider))
        assert body["id"] == i
        assert body["name"] == f"Activity{i}"
    assert provider.fetch_work_item(LONG_LOCK) is None


def test_worker_peek_lock_semantics(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute(INSTANCE, 1, name="Activity1"))
    lease = fetch_w(provider)
    assert "ActivityExecute" in lease.work_item
    assert provider.fetch_work_item(LONG_LOCK) is None

    provider.ack_work_item(lease.lock_token, activity_completed(INSTANCE, 1, "result1"))
    assert provider.fetch_work_item(LONG_LOCK) is None


def test_worker_ack_atomicity(provider: TaskHub) -> None:
    """The worker ack deletes the item and queues its completion in one step."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
    )

    provider.enqueue_worker_work(activity_execute(INSTANCE, 1, name="Activity1"))
    lease = fetch_w(provider)
    provider.ack_work_item(lease.lock_token, activity_completed(INSTANCE, 1, "result1"))

    assert provider.fetch_work_item(LONG_LOCK) is None
    item = fetch_o(provider)
    assert item.instance_id == INSTANCE
    assert len(item.messages) == 1
    assert "ActivityCompleted" in item.messages[0]


def test_timer_delayed_visibility(provider: TaskHub, move_clock: MoveClock) -> None:
    """The enqueue delay decides visibility, not the message's fire_at_ms (0 here)."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
    )

    provider.enqueue_for_orchestrator(timer_fired(INSTANCE, 1, 0), delay_ms=5_000)
    assert provider.fetch_orchestration_item(LONG_LOCK) is None

    move_clock(provider, 5100)  # past the 5 s enqueue delay
    item = fetch_o(provider)
    assert item.instance_id == INSTANCE
    assert len(item.messages) == 1
    assert "TimerFired" in item.messages[0]


def test_lost_lock_token_handling(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_worker_work(activity_execute(INSTANCE, 1, name="Activity1"))
    fetch_w(provider, LT)  # the token is lost: never acked
    assert provider.fetch_work_item(LT) is None

    move_clock(provider, PAST_LT_MS)
    assert "ActivityExecute" in fetch_w(provider, LT).work_item


def test_worker_item_immediate_visibility(provider: TaskHub) -> None:
    instance = "test-immediate-vis"
    provider.enqueue_worker_work(activity_execute(instance, 1, name="TestActivity"))
    lease = fetch_w(provider, LT)
    assert activity(lease)["name"] == "TestActivity"
    provider.ack_work_item(lease.lock_token, activity_completed(instance, 1, "done"))


def test_worker_delayed_visibility_skips_future_items(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    """An unlocked item whose visible_at is in the future is skipped."""
    instance = "test-delayed-vis"
    provider.enqueue_worker_work(activity_execute(instance, 1, name="Activity1"))
    provider.enqueue_worker_work(activity_execute(instance, 2, name="Activity2"))

    first = fetch_w(provider, LT)
    assert activity(first)["id"] == 1
    provider.abandon_work_item(first.lock_token, delay_ms=500, ignore_attempt=False)

    second = fetch_w(provider, LT)
    assert activity(second)["id"] == 2, "the delayed item should be skipped"
    assert provider.fetch_work_item(LT) is None

    move_clock(provider, 600)  # past the 500 ms abandon delay
    third = fetch_w(provider, LT)
    assert activity(third)["id"] == 1
    provider.ack_work_item(second.lock_token, activity_completed(instance, 2, "done"))
    provider.ack_work_item(third.lock_token, activity_completed(instance, 1, "done"))


def test_orphan_queue_messages_dropped(provider: TaskHub) -> None:
    """QueueMessages for an instance that never started are deleted, not fetched forever."""
    provider.enqueue_for_orchestrator(queue_message("orphan-test", "ConfigUpdate", "v1"))
    provider.enqueue_for_orchestrator(queue_message("orphan-test", "ConfigUpdate", "v2"))
    assert provider.fetch_orchestration_item(5_000) is None
    assert provider.fetch_orchestration_item(5_000) is None

    instance = "orphan-test-existing"
    create_instance(provider, instance)
    provider.enqueue_for_orchestrator(queue_message(instance, "ConfigUpdate", "v3"))
    item = fetch_o(provider, 5_000)
    assert item.instance_id == instance
    assert queue_message(instance, "ConfigUpdate", "v3") in item.messages
    provider.ack_orchestration_item(item.lock_token, item.execution_id)
