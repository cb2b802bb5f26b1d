"""duroxide provider validation suite, §3.1 atomicity: an ack commits all or nothing."""

from __future__ import annotations

import threading

import pytest

from provider import ExecutionMetadata, TaskHub, TaskHubError
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LT,
    PAST_LT_MS,
    activity_execute,
    event,
    external_raised,
    fetch_o,
    start_orchestration,
    started,
    timer_fired,
)

INSTANCE = "instance-A"


def test_atomicity_failure_rollback(provider: TaskHub) -> None:
    """A failed ack (duplicate event id) changes nothing and keeps the lock."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
    )
    assert len(provider.read_history(INSTANCE)) == 1

    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item(
            item.lock_token,
            1,
            history_delta=[started(INSTANCE, event_id=1)],
            metadata=ExecutionMetadata(),
        )
    assert len(provider.read_history(INSTANCE)) == 1
    # The failed ack must not have released the lock.
    assert provider.fetch_orchestration_item(LT) is None


def test_multi_operation_atomic_ack(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    fire_at_ms = 1_234_567_890
    delta = [
        started(INSTANCE),
        *(
            event(event_id, INSTANCE, "ActivityScheduled", name=f"Activity{event_id}", input="{}")
            for event_id in (2, 3, 4)
        ),
        event(5, INSTANCE, "TimerCreated", fire_at_ms=fire_at_ms),
    ]
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=delta,
        worker_items=[activity_execute(INSTANCE, i, name=f"Activity{i}") for i in (1, 2, 3)],
        orchestrator_items=[
            timer_fired(INSTANCE, 1, fire_at_ms),
            external_raised(INSTANCE, "TestEvent", "{}"),
        ],
        metadata=ExecutionMetadata(),
    )

    assert len(provider.read_history(INSTANCE)) == 5
    for _ in range(3):
        assert provider.fetch_work_item(LT) is not None
    assert provider.fetch_work_item(LT) is None

    item = fetch_o(provider)
    assert len(item.messages) == 2
    assert "TimerFired" in item.messages[0]
    assert "ExternalRaised" in item.messages[1]


def test_lock_released_only_on_successful_ack(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    assert provider.fetch_orchestration_item(LT) is not None
    assert provider.fetch_orchestration_item(LT) is None

    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item("invalid-lock-token", 1)
    assert provider.fetch_orchestration_item(LT) is None

    move_clock(provider, PAST_LT_MS)
    item = provider.fetch_orchestration_item(LT)
    assert item is not None
    assert item.instance_id == INSTANCE


def test_concurrent_ack_prevention(provider: TaskHub) -> None:
    """Two acks racing with the same token: exactly one commits."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    outcomes: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def ack() -> None:
        barrier.wait()
        try:
            provider.ack_orchestration_item(
                item.lock_token,
                1,
                history_delta=[started(INSTANCE)],
                metadata=ExecutionMetadata(),
            )
            outcome = "ok"
        except TaskHubError:
            outcome = "err"
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=ack) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["err", "ok"]
