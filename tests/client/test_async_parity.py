"""TaskHub and AsyncTaskHub are one provider: every operation of HubPlans is
on both faces, and one scenario that calls every one of them gives the same
results and the same errors on both.

The scenario is written once, as a generator of calls, the way the faces
share their operations: each face's driver makes the calls.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Generator
from typing import Any

import pytest

from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    event,
    external_raised,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import InvalidInput, LockLost, TaskHubError, now_ms
from provider.client.task_hub import AsyncTaskHub, HubPlans, TaskHub
from tests.support.templates import SchemaTemplates

# (operation, args, kwargs) out; its result, or the TaskHubError it raised, back.
Step = tuple[str, tuple[Any, ...], dict[str, Any]]
Scenario = Generator[Step, Any, None]

OPERATIONS = sorted(
    name
    for name, member in inspect.getmembers(HubPlans, inspect.isfunction)
    if not name.startswith("_")
)


def op(name: str, *args: Any, **kwargs: Any) -> Step:
    return name, args, kwargs


def scenario(seen: list[str]) -> Scenario:
    """Every operation once at least, with the results asserted as it goes."""

    def step(name: str, *args: Any, **kwargs: Any) -> Generator[Step, Any, Any]:
        seen.append(name)
        return (yield op(name, *args, **kwargs))

    assert (yield from step("dispatch_lag_ms")) == 0  # nothing queued yet
    yield from step("start_orchestration", "parent", "TestOrch", {"n": 1}, "1.0.0")
    item = yield from step("fetch_orchestration_item", 30_000)
    assert item.instance_id == "parent" and item.attempt_count == 1
    assert item.messages[0]["StartOrchestration"]["input"] == '{"n": 1}'
    assert (yield from step("renew_orchestration_item_lock", item.lock_token, 30_000)) > 0
    yield from step(
        "ack_orchestration_item",
        item.lock_token,
        1,
        history_delta=[
            orchestration_started("parent"),
            event(2, "parent", "CustomStatusUpdated", status="half way"),
        ],
        worker_items=[activity_execute("parent", 1, session_id="s-1")],
        metadata=metadata(),
    )
    lease = yield from step("fetch_work_item", 30_000, owner_id="owner-1")
    assert lease.work_item == activity_execute("parent", 1, session_id="s-1")
    assert (yield from step("renew_work_item_lock", lease.lock_token, 30_000)) > 0
    assert (yield from step("renew_session_lease", "s-1", "owner-1", 30_000)) > 0
    assert (yield from step("renew_session_lock", ["owner-1"], 30_000, 60_000)) == 1
    yield from step("ack_work_item", lease.lock_token, activity_completed("parent", 1))
    assert (yield from step("cleanup_orphaned_sessions")) == 0
    yield from step("set_wakeup_waiting", 0, False)  # no such listener: nothing changes

    yield from step("enqueue_worker_work", activity_execute("parent", 2))
    second = yield from step("fetch_work_item", 30_000)
    yield from step("abandon_work_item", second.lock_token, ignore_attempt=True)
    yield from step("enqueue_for_orchestrator", external_raised("parent"))
    yield from step("raise_event", "parent", "Approve", True)
    yield from step("enqueue_orchestrator_work", "other", start_orchestration("other"))
    turn = yield from step("fetch_orchestration_item", 30_000)
    assert turn.instance_id == "parent" and len(turn.messages) == 3
    assert (yield from step("abandon_orchestration_item", turn.lock_token)) == "parent"

    history = yield from step("read_history", "parent")
    assert [e["type"] for e in history] == ["OrchestrationStarted", "CustomStatusUpdated"]
    yield from step(
        "append_history", "parent", 1, [event(3, "parent", "ExternalEvent", name="x", data="1")]
    )
    assert len((yield from step("read_history", "parent", 1))) == 3
    status = yield from step("get_custom_status", "parent")
    assert status.status == "half way"
    assert (yield from step("get_kv_value", "parent", "missing")) is None
    assert (yield from step("get_kv_all_values", "parent")) == {}
    assert (yield from step("get_instance_stats", "parent")).history_event_count == 3
    assert (yield from step("trace_context", "parent")) is None  # started in no span

    assert (yield from step("list_instances")) == ["parent"]  # "other" never started
    assert (yield from step("list_instances_by_status", "Running")) == ["parent"]
    assert (yield from step("list_executions", "parent")) == [1]
    assert (yield from step("latest_execution_id", "parent")) == 1
    assert (yield from step("get_instance_info", "parent")).orchestration_name == "TestOrch"
    assert (yield from step("get_execution_info", "parent", 1)).status == "Running"
    assert (yield from step("get_system_metrics")).total_instances == 1
    assert (yield from step("get_queue_depths")).orchestrator_queue == 4
    assert (yield from step("list_children", "parent")) == []
    assert (yield from step("get_parent_id", "parent")) is None
    assert (yield from step("get_instance_tree", "parent")).all_ids == ["parent"]
    assert (yield from step("prune_executions", "parent", keep_last=1)).executions_deleted == 0
    assert (yield from step("prune_executions_bulk", keep_last=1)).executions_deleted == 0
    assert (yield from step("delete_instance_bulk")).instances_deleted == 0
    assert (yield from step("prune_ended", now_ms(), batch_size=10)).roots_deleted == 0
    found = yield from step("find_instances", limit=10)
    assert [(i.instance_id, i.status) for i in found] == [
        ("other", "Pending"),
        ("parent", "Running"),
    ]
    yield from step("cancel_instance", "parent", "parity")
    assert (yield from step("delete_instance", "other")).queue_messages_deleted == 1

    # The same errors on both faces.
    lost = yield from step("ack_work_item", "lock_unknown", None)
    assert isinstance(lost, LockLost)
    refused = yield from step("enqueue_worker_work", {"NotAnActivity": {}})
    assert isinstance(refused, InvalidInput)
    running = yield from step("delete_instance", "parent")
    assert isinstance(running, TaskHubError) and "Running" in str(running)
    deleted = yield from step("delete_instances_atomic", ["parent"], True)
    assert deleted.instances_deleted == 1


def run_blocking(hub: TaskHub, plan: Scenario) -> list[str]:
    transcript: list[str] = []
    result: Any = None
    try:
        name, args, kwargs = next(plan)
        while True:
            try:
                result = getattr(hub, name)(*args, **kwargs)
            except TaskHubError as error:
                result = error
            transcript.append(f"{name}: {describe(result)}")
            name, args, kwargs = plan.send(result)
    except StopIteration:
        return transcript


async def run_async(hub: AsyncTaskHub, plan: Scenario) -> list[str]:
    transcript: list[str] = []
    result: Any = None
    try:
        name, args, kwargs = next(plan)
        while True:
            try:
                result = await getattr(hub, name)(*args, **kwargs)
            except TaskHubError as error:
                result = error
            transcript.append(f"{name}: {describe(result)}")
            name, args, kwargs = plan.send(result)
    except StopIteration:
        return transcript


def describe(result: Any) -> str:
    """A result without what differs between two runs (tokens, clocks)."""
    if isinstance(result, TaskHubError):
        return f"{type(result).__name__}({result.sqlstate})"
    if isinstance(result, int) and result > 1_000_000_000_000:
        return "<epoch ms>"
    text = re.sub(r"datetime\.datetime\([^)]*\)\)?", "<time>", repr(result))
    for field in ("lock_token=", "timestamp_ms"):
        if field in text:
            return f"{type(result).__name__} (with {field.rstrip('=')})"
    return text


def test_both_faces_have_every_operation() -> None:
    for face in (TaskHub, AsyncTaskHub):
        missing = [name for name in OPERATIONS if name not in vars(face)]
        assert missing == [], f"{face.__name__} lacks {missing}"
    for name in OPERATIONS:
        assert inspect.iscoroutinefunction(getattr(AsyncTaskHub, name)), name
        assert parameters(getattr(TaskHub, name)) == parameters(getattr(AsyncTaskHub, name))


def parameters(method: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults (the annotations differ where a connection is
    passed: psycopg.Connection on one face, AsyncConnection on the other)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


@pytest.fixture
def two_schemas(schema_templates: SchemaTemplates) -> tuple[str, str]:
    from tests.support.db import new_schema_name

    return schema_templates.create(new_schema_name("sy")), schema_templates.create(
        new_schema_name("as")
    )


def test_one_scenario_of_every_operation_agrees_on_both_faces(
    database_url: str, two_schemas: tuple[str, str], make_hub: Callable[..., TaskHub]
) -> None:
    seen: list[str] = []
    blocking = run_blocking(make_hub(two_schemas[0]), scenario(seen))
    assert sorted(set(seen)) == OPERATIONS

    async def on_the_loop() -> list[str]:
        async with AsyncTaskHub.connect(
            database_url, two_schemas[1], statement_timeout_ms=5_000
        ) as hub:
            return await run_async(hub, scenario([]))

    assert asyncio.run(on_the_loop()) == blocking
