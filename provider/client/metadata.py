"""What an ack tells the procedures about an execution besides its events.

The runtime computes the execution's metadata (status, output, name, version,
parent, pinned runtime version). Custom status and KV changes are read from
the turn's events, as the duroxide Postgres provider does: the last
CustomStatusUpdated wins; KeyValueSet / KeyValueCleared / KeyValuesCleared
become KV mutations in event order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from provider.errors import InvalidInput
from provider.types import JsonObject


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
