"""Work items and events in the duroxide JSON format, for tests and the demo."""

from __future__ import annotations

import json
from typing import Any

from provider import ExecutionMetadata, now_ms

RUNTIME_VERSION = "0.1.32"


def start_orchestration(
    instance: str, name: str = "TestOrch", version: str | None = "1.0.0"
) -> dict[str, Any]:
    return {
        "StartOrchestration": {
            "instance": instance,
            "orchestration": name,
            "input": "{}",
            "version": version,
            "parent_instance": None,
            "parent_id": None,
            "execution_id": 1,
        }
    }


def external_raised(instance: str, name: str = "Ping", data: str = "{}") -> dict[str, Any]:
    return {"ExternalRaised": {"instance": instance, "name": name, "data": data}}


def activity_execute(
    instance: str,
    activity_id: int,
    *,
    name: str = "Activity",
    session_id: str | None = None,
    tag: str | None = None,
    execution_id: int = 1,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "instance": instance,
        "execution_id": execution_id,
        "id": activity_id,
        "name": name,
        "input": "{}",
    }
    if session_id is not None:
        body["session_id"] = session_id
    if tag is not None:
        body["tag"] = tag
    return {"ActivityExecute": body}


def activity_completed(instance: str, activity_id: int, result: str = '"ok"') -> dict[str, Any]:
    return {
        "ActivityCompleted": {
            "instance": instance,
            "execution_id": 1,
            "id": activity_id,
            "result": result,
        }
    }


def event(event_id: int, instance: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "source_event_id": None,
        "instance_id": instance,
        "execution_id": 1,
        "timestamp_ms": now_ms(),
        "duroxide_version": RUNTIME_VERSION,
        "type": kind,
        **fields,
    }


def orchestration_started(
    instance: str, name: str = "TestOrch", version: str = "1.0.0"
) -> dict[str, Any]:
    return event(
        1,
        instance,
        "OrchestrationStarted",
        name=name,
        version=version,
        input="{}",
        parent_instance=None,
        parent_id=None,
    )


def metadata(name: str = "TestOrch", version: str = "1.0.0", **fields: Any) -> ExecutionMetadata:
    return ExecutionMetadata(orchestration_name=name, orchestration_version=version, **fields)


def history_row(evt: dict[str, Any]) -> dict[str, Any]:
    """One event in the shape the procedures take (event_id, event_type, event_data)."""
    return {"event_id": evt["event_id"], "event_type": "Event", "event_data": json.dumps(evt)}


def queue_message(instance: str, name: str, data: str) -> dict[str, Any]:
    return {"QueueMessage": {"instance": instance, "name": name, "data": data}}


def timer_fired(
    instance: str, timer_id: int, fire_at_ms: int, execution_id: int = 1
) -> dict[str, Any]:
    return {
        "TimerFired": {
            "instance": instance,
            "execution_id": execution_id,
            "id": timer_id,
            "fire_at_ms": fire_at_ms,
        }
    }


def continue_as_new(
    instance: str, orchestration: str = "TestOrch", input: str = "{}", version: str | None = "1.0.0"
) -> dict[str, Any]:
    return {
        "ContinueAsNew": {
            "instance": instance,
            "orchestration": orchestration,
            "input": input,
            "version": version,
            "carry_forward_events": [],
        }
    }
