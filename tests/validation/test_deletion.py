"""duroxide provider validation suite, §3.6 deletion (13 tests).

Deleting instances and their sub-orchestration trees, the tree primitives
(list_children, get_parent_id, get_instance_tree, delete_instances_atomic),
and the safety properties of deletion: an in-flight ack or a stale activity
completion must not bring a deleted instance back.
"""

from __future__ import annotations

import pytest

from provider import ExecutionMetadata, TaskHub, TaskHubError
from tests.validation.harness import (
    LONG_LOCK,
    activity_completed,
    activity_execute,
    create_completed_instance,
    create_instance,
    event,
    external_raised,
    fetch_o,
    finish_instance,
    instance_exists,
    meta_nv,
    start_orchestration,
    start_with_parent,
    started,
)


def create_failed_instance(provider: TaskHub, instance: str) -> None:
    finish_instance(provider, instance, "Failed", "error: something went wrong")


def create_cancelled_instance(provider: TaskHub, instance: str) -> None:
    """A cancelled instance: status Failed with a cancellation output."""
    finish_instance(provider, instance, "Failed", "cancelled: user requested cancellation")


def create_child_instance(provider: TaskHub, instance: str, parent: str) -> None:
    """A completed ChildOrch sub-orchestration of `parent` (parent_id None)."""
    provider.enqueue_for_orchestrator(start_with_parent(instance, parent, None))
    item = fetch_o(provider, 5_000)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, name="ChildOrch", parent_instance=parent)],
        metadata=ExecutionMetadata(
            status="Completed",
            output="done",
            orchestration_name="ChildOrch",
            orchestration_version="1.0.0",
            parent_instance_id=parent,
        ),
    )


def test_delete_terminal_instances(provider: TaskHub) -> None:
    completed, failed, cancelled = (
        "delete-term-completed",
        "delete-term-failed",
        "delete-term-cancelled",
    )
    create_completed_instance(provider, completed)
    create_failed_instance(provider, failed)
    create_cancelled_instance(provider, cancelled)
    assert all(instance_exists(provider, i) for i in (completed, failed, cancelled))

    result = provider.delete_instance(completed, False)
    assert result.instances_deleted >= 1
    assert result.executions_deleted >= 1
    assert result.events_deleted >= 1
    assert not instance_exists(provider, completed)

    assert provider.delete_instance(failed, False).instances_deleted >= 1
    assert not instance_exists(provider, failed)

    assert provider.delete_instance(cancelled, False).instances_deleted >= 1
    assert not instance_exists(provider, cancelled)


def test_delete_running_rejected_force_succeeds(provider: TaskHub) -> None:
    instance = "delete-running-force"
    create_instance(provider, instance)

    with pytest.raises(TaskHubError) as rejected:
        provider.delete_instance(instance, False)
    assert not rejected.value.retryable
    assert "running" in str(rejected.value).lower()
    assert instance_exists(provider, instance)

    assert provider.delete_instance(instance, True).instances_deleted >= 1
    assert not instance_exists(provider, instance)


def test_delete_nonexistent_instance(provider: TaskHub) -> None:
    with pytest.raises(TaskHubError) as missing:
        provider.delete_instance("does-not-exist-12345", False)
    assert not missing.value.retryable
    assert "not found" in str(missing.value).lower()


def test_delete_cleans_queues_and_locks(provider: TaskHub) -> None:
    """Deletion removes the instance's queue rows and locks, so its id can be reused."""
    instance = "delete-queues-locks"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    provider.enqueue_worker_work(activity_execute(instance, 1, name="TestActivity"))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(instance)], metadata=meta_nv(status="Completed")
    )

    assert provider.delete_instance(instance, False).queue_messages_deleted >= 1

    reused_input = '{"reused": true}'
    restart = start_orchestration(instance, name="ReusedOrch", version="2.0.0")
    restart["StartOrchestration"]["input"] = reused_input
    provider.enqueue_for_orchestrator(restart)
    item = fetch_o(provider)
    assert item.orchestration_name == "ReusedOrch"
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, name="ReusedOrch", version="2.0.0", input=reused_input)],
        metadata=ExecutionMetadata(orchestration_name="ReusedOrch", orchestration_version="2.0.0"),
    )
    assert provider.get_instance_info(instance).orchestration_name == "ReusedOrch"

    provider.delete_instance(instance, True)


def test_cascade_delete_hierarchy(provider: TaskHub) -> None:
    root, child1, child2, grandchild = (
        "cascade-root",
        "cascade-child1",
        "cascade-child2",
        "cascade-grandchild",
    )
    create_completed_instance(provider, root)
    create_completed_instance(provider, child1, root)
    create_completed_instance(provider, child2, root)
    create_completed_instance(provider, grandchild, child1)
    tree = (root, child1, child2, grandchild)
    assert all(instance_exists(provider, i) for i in tree)

    with pytest.raises(TaskHubError) as direct:
        provider.delete_instance(child1, False)
    message = str(direct.value).lower()
    assert "sub-orchestration" in message or "root" in message or "parent" in message
    with pytest.raises(TaskHubError):
        provider.delete_instance(child1, True)
    with pytest.raises(TaskHubError):
        provider.delete_instance(grandchild, False)

    result = provider.delete_instance(root, False)
    assert result.instances_deleted >= 1
    assert result.executions_deleted >= 4
    assert not any(instance_exists(provider, i) for i in tree)


def test_force_delete_prevents_ack_recreation(provider: TaskHub) -> None:
    """An ack in flight when its instance is force-deleted fails; the instance stays gone."""
    instance = "zombie-prevention"
    create_instance(provider, instance)

    provider.enqueue_for_orchestrator(external_raised(instance, "test-event"))
    token2 = fetch_o(provider).lock_token

    assert provider.delete_instance(instance, True).instances_deleted >= 1

    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item(
            token2,
            1,
            history_delta=[event(2, instance, "ExternalEvent", name="test-event", data="{}")],
            metadata=ExecutionMetadata(),
        )
    assert not instance_exists(provider, instance)


def test_list_children(provider: TaskHub) -> None:
    root = "list-children-root"
    child1, child2 = f"{root}::sub::2", f"{root}::sub::3"
    grandchild = f"{child2}::sub::4"
    create_completed_instance(provider, root)
    create_child_instance(provider, child1, root)
    create_child_instance(provider, child2, root)
    create_child_instance(provider, grandchild, child2)

    children = provider.list_children(root)
    assert len(children) == 2
    assert set(children) == {child1, child2}
    assert grandchild not in children
    assert provider.list_children(child2) == [grandchild]
    assert provider.list_children(grandchild) == []
    assert provider.list_children("non-existent") == []

    provider.delete_instance(root, True)


def test_delete_get_parent_id(provider: TaskHub) -> None:
    root = "parent-id-root"
    child = f"{root}::sub::2"
    create_completed_instance(provider, root)
    create_child_instance(provider, child, root)

    assert provider.get_parent_id(root) is None
    assert provider.get_parent_id(child) == root
    with pytest.raises(TaskHubError):
        provider.get_parent_id("non-existent")

    provider.delete_instance(root, True)


def test_delete_get_instance_tree(provider: TaskHub) -> None:
    root = "tree-root"
    child1, child2 = f"{root}::sub::2", f"{root}::sub::3"
    grandchild = f"{child2}::sub::4"
    create_completed_instance(provider, root)
    create_child_instance(provider, child1, root)
    create_child_instance(provider, child2, root)
    create_child_instance(provider, grandchild, child2)

    tree = provider.get_instance_tree(root)
    assert tree.root_id == root
    assert tree.size() == 4
    assert not tree.is_root_only()
    assert {root, child1, child2, grandchild} <= set(tree.all_ids)

    leaf = provider.get_instance_tree(grandchild)
    assert leaf.size() == 1
    assert leaf.is_root_only()

    provider.delete_instance(root, True)


def test_delete_instances_atomic(provider: TaskHub) -> None:
    ids = ["atomic-del-1", "atomic-del-2", "atomic-del-3"]
    for instance in ids:
        create_completed_instance(provider, instance)
    assert all(instance_exists(provider, i) for i in ids)

    result = provider.delete_instances_atomic(ids, False)
    assert result.instances_deleted >= 1
    assert result.executions_deleted >= 3
    assert not any(instance_exists(provider, i) for i in ids)


def test_delete_instances_atomic_force(provider: TaskHub) -> None:
    completed, running = "atomic-force-completed", "atomic-force-running"
    create_completed_instance(provider, completed)
    create_instance(provider, running)
    ids = [completed, running]

    with pytest.raises(TaskHubError):
        provider.delete_instances_atomic(ids, False)
    assert instance_exists(provider, completed)
    assert instance_exists(provider, running)

    assert provider.delete_instances_atomic(ids, True).instances_deleted >= 1
    assert not instance_exists(provider, completed)
    assert not instance_exists(provider, running)


def test_delete_instances_atomic_orphan_detection(provider: TaskHub) -> None:
    """Deleting a parent without its child (a child spawned after the tree walk) must fail."""
    root = "orphan-detect-root"
    child = f"{root}::sub::2"
    create_completed_instance(provider, root)
    create_child_instance(provider, child, root)
    assert instance_exists(provider, root)
    assert instance_exists(provider, child)

    with pytest.raises(TaskHubError) as orphaning:
        provider.delete_instances_atomic([root], False)
    message = str(orphaning.value).lower()
    assert "child" in message or "orphan" in message or "tree" in message
    assert instance_exists(provider, root)
    assert instance_exists(provider, child)

    provider.delete_instances_atomic([root, child], False)
    assert not instance_exists(provider, root)
    assert not instance_exists(provider, child)


def test_stale_activity_after_delete_recreate(provider: TaskHub) -> None:
    """A completion from a deleted instance's activity must not reach a recreated instance."""
    instance = "stale-activity-recreate"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    scheduled = event(2, instance, "ActivityScheduled", name="OldActivity", input="old-input")
    scheduled["source_event_id"] = 2
    old_activity = activity_execute(instance, 2, name="OldActivity")
    old_activity["ActivityExecute"]["input"] = "old-input"
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance), scheduled],
        worker_items=[old_activity],
        metadata=meta_nv(),
    )

    lease = provider.fetch_work_item(LONG_LOCK)
    assert lease is not None

    assert provider.delete_instance(instance, True).instances_deleted >= 1
    assert not instance_exists(provider, instance)

    create_instance(provider, instance)
    assert provider.get_instance_info(instance).orchestration_name == "TestOrch"

    with pytest.raises(TaskHubError):
        provider.ack_work_item(
            lease.lock_token,
            activity_completed(instance, 2, "stale-result-from-old-instance"),
        )

    provider.enqueue_for_orchestrator(external_raised(instance, "probe-event"))
    item = fetch_o(provider)
    stale = [
        m
        for m in item.messages
        if "stale-result" in m.get("ActivityCompleted", {}).get("result", "")
    ]
    assert stale == [], item.messages

    provider.ack_orchestration_item(
        item.lock_token, 1, metadata=ExecutionMetadata(status="Completed")
    )
    provider.delete_instance(instance, True)
