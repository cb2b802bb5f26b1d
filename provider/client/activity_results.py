"""Completions a worker sends back to the orchestration, in the runtime's format."""

from __future__ import annotations

import json
from typing import Any

from provider.errors import InvalidInput
from provider.types import JsonObject


def activity_identity(work_item: JsonObject) -> JsonObject:
    """The ActivityExecute body of a worker item."""
    body = work_item.get("ActivityExecute")
    if not isinstance(body, dict):
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
    return _completion("ActivityCompleted", body, result=json.dumps(result))


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
