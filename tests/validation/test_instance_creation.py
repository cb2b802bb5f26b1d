"""duroxide provider validation suite, §3.8 instance_creation.

The instance row is created by the first ack (from its metadata), never by an
enqueue; later fetches report the name and version the metadata recorded.
"""

from __future__ import annotations

from typing import Any

from provider import ExecutionMetadata, TaskHub
from tests.validation.harness import fetch_o, meta_nv, start_orchestration, started


def test_instance_creation_via_metadata(provider: TaskHub) -> None:
    instance = "instance-A"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    assert item.instance_id == instance
    assert item.orchestration_name == "TestOrch"
    assert item.execution_id == 1
    assert item.history == []
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, version="2.0.0")],
        metadata=meta_nv(orchestration_version="2.0.0"),
    )

    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    # From the instance's metadata, not from the message (which says 1.0.0).
    assert item.orchestration_version == "2.0.0"
    assert item.execution_id == 1
    assert len(item.history) == 1
    provider.ack_orchestration_item(item.lock_token, 1)


def test_no_instance_creation_on_enqueue(provider: TaskHub) -> None:
    """A start message for an instance with no row yet is still fetched."""
    instance = "instance-B"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(instance)], metadata=meta_nv()
    )


def test_null_version_handling(provider: TaskHub) -> None:
    instance = "instance-C"
    provider.enqueue_for_orchestrator(start_orchestration(instance, version=None))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, version="3.0.0")],
        metadata=meta_nv(orchestration_version="3.0.0"),
    )

    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    assert item.orchestration_version == "3.0.0"
    provider.ack_orchestration_item(item.lock_token, 1)


def _start_child(child: str, parent: str | None) -> dict[str, Any]:
    item = start_orchestration(child, name="ChildOrch", version=None)
    if parent is not None:
        item["StartOrchestration"]["parent_instance"] = parent
        item["StartOrchestration"]["parent_id"] = 1
    return item


def test_sub_orchestration_instance_creation(provider: TaskHub) -> None:
    parent = "parent-instance"
    child = "parent-instance::child-instance"
    provider.enqueue_for_orchestrator(start_orchestration(parent))
    item = fetch_o(provider)
    assert item.instance_id == parent
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(parent, name="ParentOrch")],
        orchestrator_items=[_start_child(child, parent)],
        metadata=ExecutionMetadata(orchestration_name="ParentOrch", orchestration_version="1.0.0"),
    )

    item = fetch_o(provider)
    assert item.instance_id == child
    assert item.orchestration_name == "ChildOrch"
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[
            started(child, name="ChildOrch", version="1.5.0", parent_instance=parent, parent_id=1)
        ],
        metadata=ExecutionMetadata(orchestration_name="ChildOrch", orchestration_version="1.5.0"),
    )

    provider.enqueue_for_orchestrator(_start_child(child, None))
    item = fetch_o(provider)
    assert item.instance_id == child
    assert item.orchestration_version == "1.5.0"
    provider.ack_orchestration_item(item.lock_token, 1)
