"""duroxide provider validation suite, §3.14 multi_execution.

Each execution of an instance has its own history; read_history(X) reads the
newest one. SE(X, e) is a StartOrchestration carrying execution_id e.
"""

from __future__ import annotations

from typing import Any

from provider import ExecutionMetadata, TaskHub
from tests.validation.harness import (
    LONG_LOCK,
    continue_as_new,
    event,
    fetch_o,
    meta_nv,
    start_execution,
    started,
)

INSTANCE = "instance-A"


def in_execution(evt: dict[str, Any], execution_id: int) -> dict[str, Any]:
    evt["execution_id"] = execution_id
    return evt


def scheduled(event_id: int, name: str, execution_id: int, input: str = "") -> dict[str, Any]:
    """An ActivityScheduled event of instance-A."""
    evt = event(event_id, INSTANCE, "ActivityScheduled", name=name, input=input)
    return in_execution(evt, execution_id)


def completed(event_id: int, output: str, execution_id: int) -> dict[str, Any]:
    evt = event(event_id, INSTANCE, "OrchestrationCompleted", output=output)
    return in_execution(evt, execution_id)


def run_turn(
    provider: TaskHub,
    execution_id: int,
    delta: list[dict[str, Any]],
    metadata: ExecutionMetadata | None = None,
) -> None:
    """SE(A, e); fetchO; ack execution e with delta."""
    provider.enqueue_for_orchestrator(start_execution(INSTANCE, execution_id))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        execution_id,
        history_delta=delta,
        metadata=metadata or ExecutionMetadata(),
    )


def kinds(history: list[dict[str, Any]]) -> list[str]:
    return [evt["type"] for evt in history]


def test_execution_isolation(provider: TaskHub) -> None:
    run_turn(
        provider,
        1,
        [
            started(INSTANCE),
            scheduled(2, "Activity1", 1, input="input1"),
            completed(3, "result1", 1),
        ],
    )
    run_turn(provider, 2, [started(INSTANCE, execution_id=2), completed(2, "result2", 2)])

    first = provider.read_history(INSTANCE, 1)
    assert kinds(first) == ["OrchestrationStarted", "ActivityScheduled", "OrchestrationCompleted"]
    second = provider.read_history(INSTANCE, 2)
    assert kinds(second) == ["OrchestrationStarted", "OrchestrationCompleted"]
    latest = provider.read_history(INSTANCE)
    assert kinds(latest) == ["OrchestrationStarted", "OrchestrationCompleted"]


def test_latest_execution_detection(provider: TaskHub) -> None:
    """No OrchestrationStarted and no instance metadata anywhere: only the Start messages."""
    run_turn(provider, 1, [scheduled(1, "A", 1)])
    run_turn(provider, 2, [scheduled(1, "B", 2)])

    latest = provider.read_history(INSTANCE)
    assert len(latest) == 1
    assert latest[0]["type"] == "ActivityScheduled"
    assert latest[0]["name"] == "B"

    first = provider.read_history(INSTANCE, 1)
    assert len(first) == 1
    assert first[0]["type"] == "ActivityScheduled"
    assert first[0]["name"] == "A"


def test_execution_id_sequencing(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_execution(INSTANCE, 1))
    item = fetch_o(provider)
    assert item.execution_id == 1
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=meta_nv()
    )

    # The fetch reports the instance's current execution (1); the ack makes execution 2.
    run_turn(provider, 2, [started(INSTANCE, execution_id=2)], meta_nv())

    provider.enqueue_for_orchestrator(start_execution(INSTANCE, 3))
    item = fetch_o(provider)
    assert item.execution_id == 2


def test_continue_as_new_creates_new_execution(provider: TaskHub) -> None:
    run_turn(provider, 1, [started(INSTANCE)])

    provider.enqueue_for_orchestrator(continue_as_new(INSTANCE, input="new-input"))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        2,
        history_delta=[started(INSTANCE, execution_id=2, input="new-input")],
        metadata=ExecutionMetadata(),
    )

    item_or_none = provider.fetch_orchestration_item(LONG_LOCK)
    if item_or_none is not None:
        assert item_or_none.execution_id == 2


def test_execution_history_persistence(provider: TaskHub) -> None:
    for execution_id in (1, 2, 3):
        run_turn(provider, execution_id, [scheduled(1, f"Activity-{execution_id}", execution_id)])

    for execution_id in (1, 2, 3):
        history = provider.read_history(INSTANCE, execution_id)
        assert len(history) == 1
        assert history[0]["name"] == f"Activity-{execution_id}"

    latest = provider.read_history(INSTANCE)
    assert len(latest) == 1
    assert latest[0]["name"] == "Activity-3"
