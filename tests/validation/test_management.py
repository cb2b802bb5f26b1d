"""duroxide provider validation suite, §3.13 management (7 tests).

Listing and inspection: list_instances[_by_status], list_executions,
get_instance_info, get_execution_info, get_system_metrics, get_queue_depths.
"""

from __future__ import annotations

from provider import ExecutionMetadata, TaskHub
from tests.validation.harness import create_instance, fetch_o, meta_nv, start_orchestration, started


def test_list_instances(provider: TaskHub) -> None:
    ids = [f"mgmt-inst-{i}" for i in range(3)]
    for instance in ids:
        create_instance(provider, instance)

    instances = provider.list_instances()
    assert len(instances) >= 3
    for instance in ids:
        assert instance in instances


def test_list_instances_by_status(provider: TaskHub) -> None:
    instance = "mgmt-completed"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance)],
        metadata=meta_nv(status="Completed", output="done"),
    )

    assert instance in provider.list_instances_by_status("Completed")


def test_list_executions(provider: TaskHub) -> None:
    """The execution row exists even when the ack carries no instance metadata."""
    instance = "mgmt-multi-exec"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(instance)], metadata=ExecutionMetadata()
    )

    assert 1 in provider.list_executions(instance)


def test_get_instance_info(provider: TaskHub) -> None:
    instance = "mgmt-info"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, name="InfoOrch", version="2.0.0", input="test")],
        metadata=ExecutionMetadata(orchestration_name="InfoOrch", orchestration_version="2.0.0"),
    )

    info = provider.get_instance_info(instance)
    assert info.instance_id == instance
    assert info.orchestration_name == "InfoOrch"
    assert info.orchestration_version == "2.0.0"
    assert info.current_execution_id == 1


def test_get_execution_info(provider: TaskHub) -> None:
    """Rows are keyed by the locked instance, not by the event's (mismatched) instance_id."""
    provider.enqueue_for_orchestrator(start_orchestration("mgmt-exec-info"))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started("mgmt-bulk-del")],
        metadata=ExecutionMetadata(status="Completed", output="result"),
    )

    info = provider.get_execution_info("mgmt-exec-info", 1)
    assert info.execution_id == 1
    assert info.status == "Completed"
    assert info.output == "result"


def test_get_system_metrics(provider: TaskHub) -> None:
    baseline = provider.get_system_metrics().total_instances

    provider.enqueue_for_orchestrator(start_orchestration("mgmt-metrics"))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started("mgmt-cancel")], metadata=meta_nv()
    )

    metrics = provider.get_system_metrics()
    assert metrics.total_instances > baseline
    assert metrics.total_events > 0


def test_get_queue_depths(provider: TaskHub) -> None:
    baseline = provider.get_queue_depths().orchestrator_queue

    provider.enqueue_for_orchestrator(start_orchestration("mgmt-queue"))

    assert provider.get_queue_depths().orchestrator_queue > baseline
