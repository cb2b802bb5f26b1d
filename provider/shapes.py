"""The JSON shapes of the duroxide runtime, in one place: what an ack sends
(history rows, execution metadata), the completions a worker sends back, and
which instance a work item or completion is addressed to.

Execution metadata: the runtime computes status, output, name, version,
parent and pinned runtime version. Custom status and KV changes are read from
the turn's events, as the duroxide Postgres provider does: the last
CustomStatusUpdated wins; KeyValueSet / KeyValueCleared / KeyValuesCleared
become KV mutations in event order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg.types.json import Jsonb

from provider.errors import InvalidInput
from provider.types import JsonObject


def json_dumps(operation: str, what: str, value: Any, **options: Any) -> str:
    """json.dumps(value); a value JSON cannot hold (an object(), a set, a
    cycle, nesting past Python's recursion limit) is InvalidInput naming the
    call and the value, not a bare TypeError."""
    try:
        return json.dumps(value, **options)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidInput(operation, f"{what} is not JSON-serialisable: {error}") from None


def json_text(
    value: JsonObject | str, *, operation: str = "encode", what: str = "the work item"
) -> str:
    """A JSON argument passed as text (compact); text is passed as it is."""
    if isinstance(value, str):
        return value
    return json_dumps(operation, what, value, separators=(",", ":"))


def json_param(operation: str, what: str, value: Any) -> Jsonb:
    """A jsonb argument, encoded now rather than by the driver inside the
    call, so that a value JSON cannot hold is refused before any SQL."""
    # The text is JSON already: str passes it to the driver as it is.
    return Jsonb(json_dumps(operation, what, value), dumps=str)


# -- what a client starts ----------------------------------------------------
# The duroxide Python client passes inputs and event data as json.dumps of the
# value, and stores the work item as serde_json writes it: compact, UTF-8 as is.


def runtime_work_item_text(item: JsonObject) -> str:
    return json.dumps(item, separators=(",", ":"), ensure_ascii=False)


def start_orchestration_item(
    instance_id: str, name: str, input: Any, version: str | None
) -> JsonObject:
    """The StartOrchestration of the duroxide client's start_orchestration(_versioned)."""
    return {
        "StartOrchestration": {
            "instance": instance_id,
            "orchestration": name,
            "input": json_dumps("start_orchestration", "input", input),
            "version": version,
            "parent_instance": None,
            "parent_id": None,
            "execution_id": 1,
        }
    }


def external_raised_item(instance_id: str, name: str, data: Any) -> JsonObject:
    """The ExternalRaised of the duroxide client's raise_event."""
    data_text = json_dumps("raise_event", "data", data)
    return {"ExternalRaised": {"instance": instance_id, "name": name, "data": data_text}}


# -- what an ack sends -------------------------------------------------------


def history_rows(events: Sequence[JsonObject], operation: str = "history_rows") -> list[JsonObject]:
    """Events as the procedures store them: id, type and the event's JSON text."""
    return [
        {
            "event_id": event["event_id"],
            "event_type": str(event.get("type", "Event")),
            "event_data": json_text(
                event, operation=operation, what=f"history event {event['event_id']}"
            ),
        }
        for event in events
    ]


@dataclass(frozen=True)
class ExecutionMetadata:
    status: str | None = None  # Completed, Failed, ContinuedAsNew (or None: unchanged)
    output: str | None = None
    orchestration_name: str | None = None
    orchestration_version: str | None = None
    parent_instance_id: str | None = None
    pinned_duroxide_version: str | None = None  # "major.minor.patch", first turn only


def _pinned(version: str | None) -> dict[str, int] | None:
    if version is None:
        return None
    parts = version.split("-", 1)[0].split("+", 1)[0].split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise InvalidInput(
            "ack_orchestration_item",
            f"pinned_duroxide_version must look like 1.2.3, got {version!r}",
        )
    major, minor, patch = (int(part) for part in parts)
    return {"major": major, "minor": minor, "patch": patch}


def _kv_mutation(event: JsonObject) -> JsonObject | None:
    kind = event.get("type")
    if kind == "KeyValueSet":
        return {
            "action": "set",
            "key": event["key"],
            "value": event["value"],
            "last_updated_at_ms": event.get("last_updated_at_ms", 0),
        }
    if kind == "KeyValueCleared":
        return {"action": "clear_key", "key": event["key"]}
    if kind == "KeyValuesCleared":
        return {"action": "clear_all"}
    return None


def ack_metadata_json(
    metadata: ExecutionMetadata | None, history_delta: Sequence[JsonObject]
) -> dict[str, Any]:
    """The p_metadata object of ack_orchestration_item."""
    metadata = metadata or ExecutionMetadata()
    document: dict[str, Any] = {
        "status": metadata.status,
        "output": metadata.output,
        "orchestration_name": metadata.orchestration_name,
        "orchestration_version": metadata.orchestration_version,
        "parent_instance_id": metadata.parent_instance_id,
        "pinned_duroxide_version": _pinned(metadata.pinned_duroxide_version),
        "kv_mutations": [m for m in map(_kv_mutation, history_delta) if m is not None],
    }
    status_updates = [e for e in history_delta if e.get("type") == "CustomStatusUpdated"]
    if status_updates:
        last = status_updates[-1].get("status")
        document["custom_status_action"] = "set" if last is not None else "clear"
        document["custom_status_value"] = last
    return document


# -- where work items and completions go ------------------------------------


def target_instance(work_item: JsonObject) -> str:
    """The instance an orchestrator-queue message is for."""
    kinds = list(work_item)
    kind = kinds[0] if len(kinds) == 1 else None
    body = work_item.get(kind) if kind else None
    if not isinstance(body, dict) or kind == "ActivityExecute":
        raise InvalidInput(
            "enqueue_for_orchestrator",
            "expected one orchestrator work item, {Variant: {...}}, not ActivityExecute",
        )
    key = "parent_instance" if kind in ("SubOrchCompleted", "SubOrchFailed") else "instance"
    instance_id = body.get(key)
    if not isinstance(instance_id, str) or not instance_id:
        raise InvalidInput("enqueue_for_orchestrator", f"{kind} names no {key}")
    return instance_id


def completion_instance(completion: JsonObject) -> str:
    """The instance a completion (ActivityCompleted / ActivityFailed) reports to."""
    bodies = list(completion.values())
    instance_id = None
    if len(bodies) == 1 and isinstance(bodies[0], dict):
        instance_id = bodies[0].get("instance")
    if not isinstance(instance_id, str) or not instance_id:
        raise InvalidInput(
            "ack_work_item",
            "a completion must be one work item, {Variant: {...}}, naming its instance",
        )
    return instance_id


# -- completions a worker sends back -----------------------------------------


def activity_body(work_item: object) -> JsonObject | None:
    """The ActivityExecute body of a worker item, or None: safe on any JSON
    (an item the worker cannot read still has log records)."""
    body = work_item.get("ActivityExecute") if isinstance(work_item, dict) else None
    return body if isinstance(body, dict) else None


def activity_identity(work_item: JsonObject) -> JsonObject:
    """The ActivityExecute body of a worker item, which an ack needs."""
    body = activity_body(work_item)
    if body is None:
        raise InvalidInput("ack_work_item", "not an ActivityExecute work item")
    return body


def decode_input(body: JsonObject) -> Any:
    """The activity's input: JSON text as sent by the runtime, else the raw string."""
    raw = body.get("input")
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _completion(variant: str, body: JsonObject, **fields: Any) -> JsonObject:
    """A completion of the activity `body` describes, addressed to its execution."""
    return {
        variant: {
            "instance": body["instance"],
            "execution_id": body["execution_id"],
            "id": body["id"],
            **fields,
        }
    }


def activity_completed(body: JsonObject, result: Any) -> JsonObject:
    """The completion of an activity that returned `result`; a result JSON
    cannot hold is InvalidInput (the worker fails the activity with it)."""
    activity = f"activity {body.get('name')}#{body.get('id')}"
    return _completion("ActivityCompleted", body, result=json_dumps(activity, "its result", result))


def activity_failed(body: JsonObject, message: str, *, retryable: bool = False) -> JsonObject:
    details = {
        "Application": {"kind": "ActivityFailed", "message": message, "retryable": retryable}
    }
    return _completion("ActivityFailed", body, details=details)


def activity_poisoned(body: JsonObject, attempt_count: int, max_attempts: int) -> JsonObject:
    """Fails an item fetched too often, instead of running it once more."""
    message = (
        f"poison: activity {body.get('name')}#{body['id']} exceeded {max_attempts} attempts "
        f"(fetched {attempt_count} times)"
    )
    activity = {
        "instance": body["instance"],
        "execution_id": body["execution_id"],
        "activity_name": body.get("name"),
        "activity_id": body["id"],
    }
    details = {
        "Poison": {
            "attempt_count": attempt_count,
            "max_attempts": max_attempts,
            "message_type": {"Activity": activity},
            "message": message,
        }
    }
    return _completion("ActivityFailed", body, details=details)
