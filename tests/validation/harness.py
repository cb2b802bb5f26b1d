"""The notation of duroxide's provider validation suite, over our provider.

S(X)          start_orchestration(X)            StartOrchestration, TestOrch 1.0.0, execution 1
SE(X, e)      start_execution(X, e)             the same with execution_id e
OS(id, X, e)  started(X, event_id=id, execution_id=e)
AE(X, id)     activity_execute(X, id)
AC(X, id, r)  activity_completed(X, id, r)
ER(X, n)      external_raised(X, n)
meta{n,v}     meta_nv()                         name TestOrch, version 1.0.0
fetchO(t)     provider.fetch_orchestration_item(t)
fetchW(t)     provider.fetch_work_item(t)
create_instance(X)  enqueue S(X); fetchO; ack [OS(1, X, 1)] meta{n,v}
"""

from __future__ import annotations

from typing import Any

from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    continue_as_new,
    event,
    external_raised,
    queue_message,
    start_orchestration,
    timer_fired,
)
from provider import ExecutionMetadata, OrchestrationItem, TaskHub, TaskHubError, now_ms

# The suite's lock timeout (SQLite's harness uses 1 s too); fetchO without a
# timeout uses 30 s as in the suite.
LT = 1_000
LONG_LOCK = 30_000
# A little past a lease of LT: how far tests of expiry move the hub's test
# clock (tests/support/server_clock.py) instead of sleeping.
PAST_LT_MS = LT + 100
RUNTIME_VERSION = "0.1.32"

__all__ = [
    "LONG_LOCK",
    "LT",
    "PAST_LT_MS",
    "activity_completed",
    "activity_execute",
    "continue_as_new",
    "create_completed_instance",
    "create_instance",
    "event",
    "external_raised",
    "fetch_o",
    "finish_instance",
    "instance_exists",
    "meta_nv",
    "queue_message",
    "start_execution",
    "start_orchestration",
    "start_with_parent",
    "started",
    "timer_fired",
]


def start_execution(instance: str, execution_id: int, **fields: Any) -> dict[str, Any]:
    item = start_orchestration(instance, **fields)
    item["StartOrchestration"]["execution_id"] = execution_id
    return item


def started(
    instance: str,
    *,
    event_id: int = 1,
    execution_id: int = 1,
    name: str = "TestOrch",
    version: str = "1.0.0",
    input: str = "{}",
    parent_instance: str | None = None,
    parent_id: int | None = None,
    duroxide_version: str = RUNTIME_VERSION,
) -> dict[str, Any]:
    """OS(id, X, e): an OrchestrationStarted event."""
    return {
        "event_id": event_id,
        "source_event_id": None,
        "instance_id": instance,
        "execution_id": execution_id,
        "timestamp_ms": now_ms(),
        "duroxide_version": duroxide_version,
        "type": "OrchestrationStarted",
        "name": name,
        "version": version,
        "input": input,
        "parent_instance": parent_instance,
        "parent_id": parent_id,
    }


def meta_nv(**fields: Any) -> ExecutionMetadata:
    """meta{n,v}: orchestration TestOrch, version 1.0.0, plus any other fields."""
    fields.setdefault("orchestration_name", "TestOrch")
    fields.setdefault("orchestration_version", "1.0.0")
    return ExecutionMetadata(**fields)


def fetch_o(provider: TaskHub, lock_ms: int = LONG_LOCK) -> OrchestrationItem:
    """fetchO that must return an item."""
    item = provider.fetch_orchestration_item(lock_ms)
    assert item is not None, "expected an orchestration item"
    return item


def create_instance(provider: TaskHub, instance: str) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token, 1, history_delta=[started(instance)], metadata=meta_nv()
    )


def start_with_parent(instance: str, parent: str | None, parent_id: int | None) -> dict[str, Any]:
    """StartOrchestration of TestOrch 1.0.0 with the given parent fields."""
    item = start_orchestration(instance)
    item["StartOrchestration"]["parent_instance"] = parent
    item["StartOrchestration"]["parent_id"] = parent_id
    return item


def finish_instance(
    provider: TaskHub, instance: str, status: str, output: str, parent: str | None = None
) -> None:
    """Start an instance (TestOrch, parent_id 1 if it has a parent) and end it in one turn."""
    parent_id = 1 if parent is not None else None
    provider.enqueue_for_orchestrator(start_with_parent(instance, parent, parent_id))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, parent_instance=parent, parent_id=parent_id)],
        metadata=meta_nv(status=status, output=output, parent_instance_id=parent),
    )


def create_completed_instance(provider: TaskHub, instance: str, parent: str | None = None) -> None:
    finish_instance(provider, instance, "Completed", "done", parent)


def instance_exists(provider: TaskHub, instance: str) -> bool:
    try:
        provider.get_instance_info(instance)
    except TaskHubError:
        return False
    return True
