"""Provider validation: cancellation (duroxide-core-contract §3.3).

Worker items are fetched, renewed and acked regardless of the orchestration's
state; activities named in an ack's cancelled_activities leave the worker
queue (after that ack's inserts), and a worker whose item was deleted finds
out on its next ack or renewal.
"""

from __future__ import annotations

from typing import Any

import pytest

from provider import ExecutionMetadata, TaskHub, TaskHubError
from tests.validation.harness import (
    LONG_LOCK,
    activity_completed,
    activity_execute,
    event,
    external_raised,
    fetch_o,
    start_orchestration,
    started,
)

SHORT = 100  # ms: the suite's "fetchW(100 ms)" / "fetchO(100 ms)"


def running_meta(**fields: Any) -> ExecutionMetadata:
    """meta{name "TestOrch", status "Running"} unless overridden."""
    fields.setdefault("orchestration_name", "TestOrch")
    fields.setdefault("status", "Running")
    return ExecutionMetadata(**fields)


def cancelled(instance: str, activity_id: int, execution_id: int = 1) -> dict[str, Any]:
    """A ScheduledActivityIdentifier."""
    return {"instance": instance, "execution_id": execution_id, "activity_id": activity_id}


def start_with(
    provider: TaskHub,
    instance: str,
    *,
    delta: list[dict[str, Any]] | None = None,
    workers: list[dict[str, Any]] | None = None,
    metadata: ExecutionMetadata | None = None,
    cancels: list[dict[str, Any]] | None = None,
) -> None:
    """Enqueue S(X), fetch it, and ack its first turn (delta defaults to [OS(1)])."""
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=delta if delta is not None else [started(instance)],
        worker_items=workers or [],
        metadata=metadata if metadata is not None else running_meta(),
        cancelled_activities=cancels or [],
    )


def trigger_turn(provider: TaskHub, instance: str) -> str:
    """Enqueue an ExternalRaised trigger and fetch the turn; returns its lock token."""
    provider.enqueue_for_orchestrator(external_raised(instance, "Trigger"))
    item = fetch_o(provider)
    assert item.instance_id == instance
    return item.lock_token


def test_fetch_returns_running_state_for_active_orchestration(provider: TaskHub) -> None:
    instance = "inst-running"
    start_with(provider, instance, workers=[activity_execute(instance, 1, name="TestActivity")])
    assert provider.fetch_work_item(LONG_LOCK) is not None


def test_fetch_returns_terminal_state_when_orchestration_completed(provider: TaskHub) -> None:
    """The provider does not filter worker items by orchestration status."""
    instance = "inst-completed"
    start_with(
        provider,
        instance,
        delta=[started(instance), event(2, instance, "OrchestrationCompleted", output="done")],
        workers=[activity_execute(instance, 1, name="TestActivity")],
        metadata=running_meta(status="Completed", output="done"),
    )
    assert provider.fetch_work_item(LONG_LOCK) is not None


def test_fetch_returns_terminal_state_when_orchestration_failed(provider: TaskHub) -> None:
    instance = "inst-failed"
    details = {
        "Application": {"kind": "OrchestrationFailed", "message": "boom", "retryable": False}
    }
    start_with(
        provider,
        instance,
        delta=[started(instance), event(2, instance, "OrchestrationFailed", details=details)],
        workers=[activity_execute(instance, 1, name="TestActivity")],
        metadata=running_meta(status="Failed"),
    )
    assert provider.fetch_work_item(LONG_LOCK) is not None


def test_fetch_returns_terminal_state_when_orchestration_continued_as_new(
    provider: TaskHub,
) -> None:
    instance = "inst-can"
    start_with(
        provider,
        instance,
        delta=[
            started(instance),
            event(2, instance, "OrchestrationContinuedAsNew", input="new-input"),
        ],
        workers=[activity_execute(instance, 1, name="TestActivity")],
        metadata=running_meta(status="ContinuedAsNew", output="new-input"),
    )
    assert provider.fetch_work_item(LONG_LOCK) is not None


def test_fetch_returns_missing_state_when_instance_deleted(provider: TaskHub) -> None:
    """An activity of an instance that never existed is still handed out."""
    provider.enqueue_worker_work(activity_execute("inst-missing", 1, name="TestActivity"))
    assert provider.fetch_work_item(LONG_LOCK) is not None


def test_renew_returns_running_when_orchestration_active(provider: TaskHub) -> None:
    instance = "inst-renew-run"
    start_with(provider, instance, workers=[activity_execute(instance, 1, name="TestActivity")])
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None
    provider.renew_work_item_lock(lease.lock_token, LONG_LOCK)


def test_renew_returns_terminal_when_orchestration_completed(provider: TaskHub) -> None:
    """Renewing a worker lease does not depend on the orchestration's status."""
    instance = "inst-renew-term"
    start_with(provider, instance, workers=[activity_execute(instance, 1, name="TestActivity")])
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None

    token = trigger_turn(provider, instance)
    provider.ack_orchestration_item(
        token,
        1,
        history_delta=[event(2, instance, "OrchestrationCompleted", output="done")],
        metadata=ExecutionMetadata(status="Completed", output="done"),
    )

    provider.renew_work_item_lock(lease.lock_token, LONG_LOCK)


def test_renew_returns_missing_when_instance_deleted(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("inst-renew-missing", 1, name="TestActivity"))
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None
    provider.renew_work_item_lock(lease.lock_token, LONG_LOCK)


def test_ack_work_item_none_deletes_without_enqueue(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("inst-ack-none", 1, name="TestActivity"))
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None

    provider.ack_work_item(lease.lock_token, None)

    assert provider.fetch_work_item(SHORT) is None, "worker queue should be empty"
    assert provider.fetch_orchestration_item(SHORT) is None, "no completion may be enqueued"


def test_cancelled_activities_deleted_from_worker_queue(provider: TaskHub) -> None:
    instance = "inst-cancel-delete"
    start_with(
        provider,
        instance,
        workers=[activity_execute(instance, i, name=f"Activity{i}") for i in (1, 2, 3)],
    )
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None, "an activity should be queued"
    provider.abandon_work_item(lease.lock_token, delay_ms=None, ignore_attempt=False)

    token = trigger_turn(provider, instance)
    provider.ack_orchestration_item(
        token,
        1,
        metadata=ExecutionMetadata(),
        cancelled_activities=[cancelled(instance, 1), cancelled(instance, 2)],
    )

    remaining = provider.fetch_work_item(LONG_LOCK)
    assert remaining is not None, "activity 3 should remain"
    assert remaining.work_item["ActivityExecute"]["id"] == 3
    assert provider.fetch_work_item(SHORT) is None, "activities 1 and 2 should be gone"


def test_ack_work_item_fails_when_entry_deleted(provider: TaskHub) -> None:
    instance = "inst-ack-stolen"
    provider.enqueue_worker_work(activity_execute(instance, 1, name="TestActivity"))
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None
    provider.ack_work_item(lease.lock_token, None)

    with pytest.raises(TaskHubError) as failure:
        provider.ack_work_item(lease.lock_token, activity_completed(instance, 1, "done"))
    assert not failure.value.retryable, f"a deleted entry is a permanent error: {failure.value}"


def test_renew_fails_when_entry_deleted(provider: TaskHub) -> None:
    provider.enqueue_worker_work(activity_execute("inst-renew-stolen", 1, name="TestActivity"))
    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None
    provider.ack_work_item(lease.lock_token, None)

    with pytest.raises(TaskHubError):
        provider.renew_work_item_lock(lease.lock_token, LONG_LOCK)


def test_cancelling_nonexistent_activities_is_idempotent(provider: TaskHub) -> None:
    instance = "inst-cancel-idempotent"
    start_with(
        provider,
        instance,
        metadata=ExecutionMetadata(orchestration_name="TestOrch"),
        cancels=[cancelled(instance, 999), cancelled(instance, 1)],
    )


def test_batch_cancellation_deletes_multiple_activities(provider: TaskHub) -> None:
    instance = "inst-batch-cancel"
    start_with(
        provider,
        instance,
        workers=[activity_execute(instance, i, name=f"Activity{i}") for i in range(1, 6)],
    )

    token = trigger_turn(provider, instance)
    provider.ack_orchestration_item(
        token,
        1,
        metadata=ExecutionMetadata(),
        cancelled_activities=[cancelled(instance, i) for i in range(1, 6)],
    )

    assert provider.fetch_work_item(SHORT) is None, "all five activities should be cancelled"


def test_same_activity_in_worker_items_and_cancelled_is_noop(provider: TaskHub) -> None:
    """Worker items are inserted before cancellations are applied, so the pair nets out."""
    instance = "inst-schedule-then-cancel"
    start_with(
        provider,
        instance,
        workers=[
            activity_execute(instance, 2, name="DroppedActivity"),
            activity_execute(instance, 3, name="NormalActivity"),
        ],
        cancels=[cancelled(instance, 2)],
    )

    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None, "the normal activity should be queued"
    body = lease.work_item["ActivityExecute"]
    assert body["id"] == 3
    assert body["name"] == "NormalActivity"
    provider.ack_work_item(lease.lock_token, None)

    assert provider.fetch_work_item(SHORT) is None, "the scheduled-then-cancelled one is gone"


def test_orphan_activity_after_instance_force_deletion(provider: TaskHub) -> None:
    """Either outcome is valid: the activity survives the deletion, or it went with it."""
    instance = "inst-orphan-activity"
    activity = activity_execute(instance, 1, name="TestActivity")
    activity["ActivityExecute"]["input"] = "test-input"
    start_with(
        provider,
        instance,
        workers=[activity],
        metadata=running_meta(orchestration_version="1.0.0"),
    )

    result = provider.delete_instance(instance, True)
    assert result.instances_deleted > 0, "force delete should remove the instance"
    with pytest.raises(TaskHubError):
        provider.get_instance_info(instance)

    lease = provider.fetch_work_item(5_000)
    if lease is not None:
        provider.ack_work_item(lease.lock_token, activity_completed(instance, 1, "orphan-result"))
