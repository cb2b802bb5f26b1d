"""Provider validation suite §3.5 custom_status: custom status set / clear / versioning.

The custom status is derived by the provider from the CustomStatusUpdated
events of an ack's history delta (the last one wins; status None clears it).
"""

from __future__ import annotations

from typing import Any

from provider import CustomStatus, ExecutionMetadata, TaskHub
from tests.validation.harness import create_instance, event, external_raised, fetch_o


def _status_updated(event_id: int, instance: str, status: str | None) -> dict[str, Any]:
    return event(event_id, instance, "CustomStatusUpdated", status=status)


def _ack_with_metadata(
    provider: TaskHub,
    instance: str,
    execution_id: int,
    delta: list[dict[str, Any]],
    metadata: ExecutionMetadata,
) -> None:
    """poke (ER(X, "poke")), then fetchO (must be Some) and ack."""
    provider.enqueue_for_orchestrator(external_raised(instance, "poke", "{}"))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token, execution_id, history_delta=delta, metadata=metadata
    )


def _set_status(provider: TaskHub, instance: str, event_id: int, status: str | None) -> None:
    _ack_with_metadata(
        provider, instance, 1, [_status_updated(event_id, instance, status)], ExecutionMetadata()
    )


def test_custom_status_set(provider: TaskHub) -> None:
    create_instance(provider, "cs-set")
    _set_status(provider, "cs-set", 100, "progress")

    assert provider.get_custom_status("cs-set", 0) == CustomStatus("progress", 1)


def test_custom_status_clear(provider: TaskHub) -> None:
    create_instance(provider, "cs-clear")
    _set_status(provider, "cs-clear", 100, "temp")
    current = provider.get_custom_status("cs-clear", 0)
    assert current is not None
    assert current.status == "temp"

    _set_status(provider, "cs-clear", 101, None)

    assert provider.get_custom_status("cs-clear", 0) == CustomStatus(None, 2)


def test_custom_status_none_preserves(provider: TaskHub) -> None:
    """An ack without a CustomStatusUpdated event leaves the status as it was."""
    create_instance(provider, "cs-none")
    _set_status(provider, "cs-none", 100, "keep-me")

    _ack_with_metadata(provider, "cs-none", 1, [], ExecutionMetadata())

    assert provider.get_custom_status("cs-none", 0) == CustomStatus("keep-me", 1)


def test_custom_status_version_increments(provider: TaskHub) -> None:
    create_instance(provider, "cs-ver")

    _set_status(provider, "cs-ver", 100, "a")
    assert provider.get_custom_status("cs-ver", 0) == CustomStatus("a", 1)

    _set_status(provider, "cs-ver", 101, "b")
    assert provider.get_custom_status("cs-ver", 0) == CustomStatus("b", 2)

    _set_status(provider, "cs-ver", 102, None)
    assert provider.get_custom_status("cs-ver", 0) == CustomStatus(None, 3)


def test_custom_status_polling_no_change(provider: TaskHub) -> None:
    """get_custom_status(X, last_seen) is None when nothing changed after last_seen."""
    create_instance(provider, "cs-poll")
    _set_status(provider, "cs-poll", 100, "v1")

    assert provider.get_custom_status("cs-poll", 1) is None
    assert provider.get_custom_status("cs-poll", 0) is not None


def test_custom_status_nonexistent_instance(provider: TaskHub) -> None:
    assert provider.get_custom_status("does-not-exist", 0) is None


def test_custom_status_default_on_new_instance(provider: TaskHub) -> None:
    """A new instance has no custom status (version 0), so get(X, 0) is None."""
    create_instance(provider, "cs-default")

    assert provider.get_custom_status("cs-default", 0) is None
