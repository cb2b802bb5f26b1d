"""duroxide provider validation suite, §3.16 prune (4 tests).

prune_executions deletes old executions of an instance (the current one is
always kept); prune_executions_bulk does so for every matching instance,
running ones included.
"""

from __future__ import annotations

import pytest

from provider import TaskHub, TaskHubError
from tests.validation.harness import (
    continue_as_new,
    fetch_o,
    meta_nv,
    start_orchestration,
    started,
)


def build_executions(provider: TaskHub, instance: str, count: int, name: str, last: str) -> None:
    """A ContinueAsNew chain: executions 1..count-1 ContinuedAsNew, the last one `last`."""
    for execution in range(1, count + 1):
        if execution == 1:
            provider.enqueue_for_orchestrator(start_orchestration(instance))
        else:
            provider.enqueue_for_orchestrator(continue_as_new(instance, name, "{}", "1.0.0"))
        item = fetch_o(provider)
        provider.ack_orchestration_item(
            item.lock_token,
            execution,
            history_delta=[started(instance, execution_id=execution, name=name)],
            metadata=meta_nv(
                status=last if execution == count else "ContinuedAsNew", orchestration_name=name
            ),
        )


def create_multi_execution_instance(provider: TaskHub, instance: str, count: int) -> None:
    build_executions(provider, instance, count, "TestOrch", "Completed")


def create_running_multi_execution_instance(provider: TaskHub, instance: str, count: int) -> None:
    build_executions(provider, instance, count, "LongRunning", "Running")


def test_prune_options_combinations(provider: TaskHub) -> None:
    instance = "prune-options-test"
    create_multi_execution_instance(provider, instance, 4)
    assert len(provider.list_executions(instance)) == 4

    result = provider.prune_executions(instance, keep_last=2)
    assert result.instances_processed == 1
    remaining = provider.list_executions(instance)
    assert len(remaining) == 2
    assert 3 in remaining or 4 in remaining

    instance2 = "prune-options-empty"
    create_multi_execution_instance(provider, instance2, 3)
    current = provider.get_instance_info(instance2).current_execution_id
    provider.prune_executions(instance2, keep_last=None, completed_before_ms=None)
    assert provider.list_executions(instance2) == [current]


def test_prune_safety(provider: TaskHub) -> None:
    instance = "prune-safety-current"
    create_multi_execution_instance(provider, instance, 3)
    provider.prune_executions(instance, keep_last=0)
    assert provider.get_instance_info(instance).current_execution_id == 3

    with pytest.raises(TaskHubError):
        provider.prune_executions("does-not-exist-prune", keep_last=1)

    for label, keep_last in (("none", None), ("some0", 0), ("some1", 1)):
        terminal = f"prune-terminal-{label}"
        create_multi_execution_instance(provider, terminal, 4)
        info = provider.get_instance_info(terminal)
        assert info.status == "Completed"

        result = provider.prune_executions(terminal, keep_last=keep_last)

        assert provider.list_executions(terminal) == [info.current_execution_id], label
        assert result.executions_deleted >= 3, label


def test_prune_bulk(provider: TaskHub) -> None:
    ids = [f"prune-bulk-{i}" for i in range(3)]
    for instance in ids:
        create_multi_execution_instance(provider, instance, 4)

    result = provider.prune_executions_bulk(instance_ids=ids[:2], keep_last=1)
    assert result.instances_processed == 2
    assert result.executions_deleted >= 4

    assert len(provider.list_executions(ids[0])) == 1
    assert len(provider.list_executions(ids[1])) == 1
    assert len(provider.list_executions(ids[2])) == 4


def test_prune_bulk_includes_running_instances(provider: TaskHub) -> None:
    """A running instance's old executions are pruned; its current one is kept."""
    instance = "prune-running-inst"
    create_running_multi_execution_instance(provider, instance, 3)
    assert len(provider.list_executions(instance)) == 3
    info = provider.get_instance_info(instance)
    assert info.status == "Running"
    assert info.current_execution_id == 3

    result = provider.prune_executions_bulk(instance_ids=[instance], keep_last=1)
    assert result.instances_processed == 1
    assert result.executions_deleted == 2

    assert provider.list_executions(instance) == [3]
    assert provider.get_instance_info(instance).status == "Running"
