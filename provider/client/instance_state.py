"""What an instance holds besides its queues: history, custom status, KV, sizes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from provider.client.plans import Plan, Plans
from provider.errors import PermanentError
from provider.shapes import history_rows, json_param
from provider.tracing import TraceContext
from provider.types import CustomStatus, InstanceStats, JsonObject


class InstanceState(Plans):
    def read_history(
        self, instance_id: str, execution_id: int | None = None
    ) -> Plan[list[JsonObject]]:
        """Events of one execution (default: the newest), in order. Runs
        fetch_history, or fetch_history_with_execution for a given execution."""
        if execution_id is None:
            rows = yield from self._call("fetch_history", p_instance_id=instance_id)
        else:
            rows = yield from self._call(
                "fetch_history_with_execution",
                p_instance_id=instance_id,
                p_execution_id=execution_id,
            )
        return [
            _parsed_event(instance_id, position, row["out_event_data"])
            for position, row in enumerate(rows)
        ]

    def append_history(
        self, instance_id: str, execution_id: int, events: Sequence[JsonObject]
    ) -> Plan[None]:
        """Append events; an event id that already exists is left as it was."""
        yield from self._call(
            "append_history",
            p_instance_id=instance_id,
            p_execution_id=execution_id,
            p_events=json_param("append_history", "events", history_rows(events, "append_history")),
        )

    def get_custom_status(
        self, instance_id: str, last_seen_version: int = 0
    ) -> Plan[CustomStatus | None]:
        """The custom status if it changed after last_seen_version, else None."""
        rows = yield from self._call(
            "get_custom_status", p_instance_id=instance_id, p_last_seen_version=last_seen_version
        )
        if not rows:
            return None
        return CustomStatus(rows[0]["out_custom_status"], int(rows[0]["out_custom_status_version"]))

    def trace_context(self, instance_id: str) -> Plan[TraceContext | None]:
        """The W3C trace context the instance's work continues: the one it was
        started (or first reached) with, else its nearest ancestor's; None
        without one (provider/tracing.py). Runs taskhub_trace_context."""
        rows = yield from self._call("taskhub_trace_context", p_instance_id=instance_id)
        if not rows:
            return None
        return TraceContext(rows[0]["traceparent"], rows[0]["tracestate"])

    def get_kv_value(self, instance_id: str, key: str) -> Plan[str | None]:
        rows = yield from self._call("get_kv_value", p_instance=instance_id, p_key=key)
        row = rows[0]
        return str(row["out_value"]) if row["out_found"] else None

    def get_kv_all_values(self, instance_id: str) -> Plan[dict[str, str]]:
        rows = yield from self._call("get_kv_all_values", p_instance=instance_id)
        return {str(row["out_key"]): str(row["out_value"]) for row in rows}

    def get_instance_stats(self, instance_id: str) -> Plan[InstanceStats | None]:
        rows = yield from self._call("get_instance_stats", p_instance=instance_id)
        row = rows[0]
        if not row.pop("out_found"):
            return None
        return InstanceStats(
            **{name.removeprefix("out_"): int(value) for name, value in row.items()}
        )


def _parsed_event(instance_id: str, position: int, event_data: str) -> JsonObject:
    """One stored event; one that no JSON parser can read (invalid, or nested
    past Python's recursion limit) is a clear error, not a crash."""
    try:
        event = json.loads(event_data)
    except (ValueError, RecursionError) as error:
        raise PermanentError(
            "read_history",
            f"event {position + 1} of {instance_id} cannot be read as JSON: {error}"[:500],
        ) from None
    if not isinstance(event, dict):
        raise PermanentError(
            "read_history", f"event {position + 1} of {instance_id} is not a JSON object"
        )
    return event
