"""What an instance holds besides its queues: history, custom status, KV, sizes."""

from __future__ import annotations

import json
from collections.abc import Sequence

from psycopg.types.json import Jsonb

from provider.client.orchestration_queue import history_rows
from provider.client.procedures import ProcedureClient
from provider.errors import PermanentError
from provider.types import CustomStatus, InstanceStats, JsonObject


class InstanceState(ProcedureClient):
    def read_history(self, instance_id: str, execution_id: int | None = None) -> list[JsonObject]:
        """Events of one execution (default: the newest), in order."""
        if execution_id is None:
            rows = self._call("fetch_history", [instance_id])
        else:
            rows = self._call("fetch_history_with_execution", [instance_id, execution_id])
        return [_parsed_event(instance_id, position, row[0]) for position, row in enumerate(rows)]

    def append_history(
        self, instance_id: str, execution_id: int, events: Sequence[JsonObject]
    ) -> None:
        """Append events; an event id that already exists is left as it was."""
        self._call("append_history", [instance_id, execution_id, Jsonb(history_rows(events))])

    def get_custom_status(
        self, instance_id: str, last_seen_version: int = 0
    ) -> CustomStatus | None:
        """The custom status if it changed after last_seen_version, else None."""
        rows = self._call("get_custom_status", [instance_id, last_seen_version])
        return CustomStatus(rows[0][0], int(rows[0][1])) if rows else None

    def get_kv_value(self, instance_id: str, key: str) -> str | None:
        value, found = self._call("get_kv_value", [instance_id, key])[0]
        return str(value) if found else None

    def get_kv_all_values(self, instance_id: str) -> dict[str, str]:
        return {
            str(key): str(value) for key, value in self._call("get_kv_all_values", [instance_id])
        }

    def get_instance_stats(self, instance_id: str) -> InstanceStats | None:
        found, *figures = self._call("get_instance_stats", [instance_id])[0]
        return InstanceStats(*(int(figure) for figure in figures)) if found else None


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
