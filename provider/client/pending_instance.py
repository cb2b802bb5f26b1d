"""An instance known only by its messages, as a plan: what its queued and
dead-lettered messages say of it, and why it may not have started."""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from provider.client.plans import Plan, Plans
from provider.client.reads import Column, Read, Where
from provider.hub_rows import PendingInstance

_START = sql.Literal('{"StartOrchestration":')


class PendingInstances(Plans):
    def pending_instance(self, instance_id: str) -> Plan[PendingInstance | None]:
        """An instance known only by its messages (queued, or moved to the
        dead letters): what they say of it, and why it may not have started.
        None: no trace of it at all."""
        start = Column(
            "start",
            sql.SQL("max(work_item) FILTER (WHERE left(work_item, 22) = {})").format(_START),
        )
        queued = yield from self._read(
            Read(
                "orchestrator_queue",
                (
                    Column("messages", sql.SQL("count(*)")),
                    Column("max_attempt_count", sql.SQL("max(attempt_count)")),
                    Column("first_at", sql.SQL("min(created_at)")),
                    start,
                ),
                (Where("instance_id", "=", instance_id),),
            )
        )
        dead = yield from self._read(
            Read(
                "dead_letters",
                (
                    Column("messages", sql.SQL("count(*)")),
                    Column("first_at", sql.SQL("min(original_created_at)")),
                    start,
                ),
                (
                    Where("instance_id", "=", instance_id),
                    Where("source_queue", "=", "orchestrator"),
                ),
            )
        )
        in_queue, in_letters = queued[0], dead[0]
        if not in_queue["messages"] and not in_letters["messages"]:
            return None
        first = [at for at in (in_queue["first_at"], in_letters["first_at"]) if at is not None]
        starts = [item for item in (in_queue["start"], in_letters["start"]) if item is not None]
        begun = _start_of(max(starts) if starts else None)
        name = begun.get("orchestration")
        return PendingInstance(
            instance_id=instance_id,
            status="Pending",
            orchestration_name=name,
            orchestration_version=begun.get("version"),
            queued_messages=int(in_queue["messages"]),
            dead_letters=int(in_letters["messages"]),
            max_attempt_count=in_queue["max_attempt_count"],
            first_message_at=min(first) if first else None,
            note=_why_not_started(name, int(in_queue["messages"]), in_queue["max_attempt_count"]),
        )


def _start_of(work_item: str | None) -> dict[str, Any]:
    try:
        start = json.loads(work_item)["StartOrchestration"] if work_item else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return start if isinstance(start, dict) else {}


def _why_not_started(name: str | None, queued_messages: int, deliveries: int | None) -> str:
    if queued_messages == 0:
        return "not started: its messages are in the dead letters (taskhub-pg requeue them)"
    if name is None:
        return "not started: messages wait for it, but none of them starts it"
    if not deliveries:
        return "not started yet: no runtime has taken its start"
    return (
        f"not started: its start was handed out {deliveries} times and given back;"
        f" is orchestration {name!r} registered with a runtime on this hub?"
    )
