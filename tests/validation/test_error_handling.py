"""duroxide provider validation suite, §3.7 error_handling: bad calls fail cleanly."""

from __future__ import annotations

import pytest

from provider import ExecutionMetadata, TaskHub, TaskHubError
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LT,
    PAST_LT_MS,
    event,
    fetch_o,
    start_orchestration,
    started,
)

INSTANCE = "instance-A"


def test_invalid_lock_token_on_ack(provider: TaskHub) -> None:
    """The error names the lock token (the runtime matches on this wording)."""
    with pytest.raises(TaskHubError) as raised:
        provider.ack_orchestration_item("invalid-token", 1)
    message = raised.value.message
    assert "Invalid lock token" in message or "lock_token" in message


def test_duplicate_event_id_rejection(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
    )

    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider)
    duplicate = event(1, INSTANCE, "ActivityScheduled", name="Activity", input="{}")
    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item(
            item.lock_token, 1, history_delta=[duplicate], metadata=ExecutionMetadata()
        )

    history = provider.read_history(INSTANCE)
    assert len(history) == 1
    assert history[0]["type"] == "OrchestrationStarted"


def test_missing_instance_metadata(provider: TaskHub) -> None:
    assert provider.read_history("non-existent-instance") == []


def test_corrupted_serialization_data(provider: TaskHub) -> None:
    """A fetch on an empty store returns normally (None or an item) rather than raising."""
    item = provider.fetch_orchestration_item(LT)
    assert item is None or item.instance_id


def test_lock_expiration_during_ack(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    item = fetch_o(provider, LT)
    move_clock(provider, PAST_LT_MS)
    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item(
            item.lock_token, 1, history_delta=[started(INSTANCE)], metadata=ExecutionMetadata()
        )
