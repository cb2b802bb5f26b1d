"""Why an instance failed, as a plan: the error its current execution ended
with, and each activity or sub-orchestration that failed on the way
(`taskhub-pg inspect instance`, the dashboard's instance page)."""

from __future__ import annotations

from typing import Any

from psycopg import sql

from provider.client.hub_views import CURRENT_EXECUTION
from provider.client.plans import Plan, Plans, Rows
from provider.client.reads import Column, Order, Read, Where
from provider.hub_rows import FailedStep, InstanceFailure

# The history events that say what went wrong, and those that scheduled
# what failed (a failure names its scheduling event by source_event_id):
# only these are parsed, the kind read from the event itself (the
# event_type column is the writer's to name).
_FAILURE_KINDS = (
    r'"type"\s*:\s*"(Activity|SubOrchestration|Orchestration)Failed"'
    r'|"type"\s*:\s*"(ActivityScheduled|SubOrchestrationScheduled)"'
)
_FAILED = ("ActivityFailed", "SubOrchestrationFailed", "OrchestrationFailed")


def _event(operator: str, field: str) -> sql.Composed:
    """A field of the event a history row holds, as the event's JSON says it
    (->> as text, -> as JSON)."""
    return sql.SQL("(event_data::jsonb {} {})").format(sql.SQL(operator), sql.Literal(field))


class InstanceFailures(Plans):
    def read_failure(self, instance_id: str) -> Plan[InstanceFailure | None]:
        """Why an instance failed, in full: the error its current execution
        ended with, and each activity or sub-orchestration that failed on
        the way (its name, how often it was scheduled, its error's details).
        None unless the current execution is Failed."""
        ended = yield from self._read(
            Read(
                "instances",
                (
                    Column("execution_id", sql.SQL("e.execution_id")),
                    Column("output", sql.SQL("e.output")),
                ),
                alias="i",
                joins=(CURRENT_EXECUTION,),
                where=(Where("i.instance_id", "=", instance_id), Where("e.status", "=", "Failed")),
            )
        )
        if not ended:
            return None
        execution_id = int(ended[0]["execution_id"])
        events = yield from self._read(
            Read(
                "history",
                (
                    Column("event_id"),
                    Column("kind", _event("->>", "type")),
                    Column("name", _event("->>", "name")),
                    Column(
                        "source_event_id",
                        sql.SQL("{}::bigint").format(_event("->>", "source_event_id")),
                    ),
                    Column("details", _event("->", "details")),
                ),
                where=(
                    Where("instance_id", "=", instance_id),
                    Where("execution_id", "=", execution_id),
                    Where(sql.SQL("event_data::text"), "~", _FAILURE_KINDS),
                ),
                order=(Order("event_id"),),
            )
        )
        steps = _failed_steps(events)
        ending = [step for step in steps if step.kind == "OrchestrationFailed"]
        return InstanceFailure(
            execution_id=execution_id,
            error=ended[0]["output"],
            details=ending[-1].details if ending else None,
            failed_steps=[step for step in steps if step.kind != "OrchestrationFailed"],
        )


def _failed_steps(events: Rows) -> list[FailedStep]:
    """Each failure among the events, named after the event that scheduled
    it, with how often that name was scheduled (in the execution)."""
    by_id = {row["event_id"]: row for row in events}

    def attempts(scheduled: dict[str, Any] | None) -> int:
        if scheduled is None or scheduled["kind"] is None or scheduled["name"] is None:
            return 0
        return sum(
            1
            for row in events
            if row["kind"] == scheduled["kind"] and row["name"] == scheduled["name"]
        )

    steps = []
    for row in events:
        if row["kind"] not in _FAILED:
            continue
        scheduled = by_id.get(row["source_event_id"])
        steps.append(
            FailedStep(
                event_id=int(row["event_id"]),
                kind=str(row["kind"]),
                name=scheduled["name"] if scheduled is not None else None,
                attempts=attempts(scheduled),
                details=row["details"],
            )
        )
    return steps
