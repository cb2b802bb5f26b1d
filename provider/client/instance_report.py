"""One instance as an operator looks at it, as plans: its row (or what its
messages say of it, before it starts), executions, queued messages, leases,
dead letters, why it failed, its history, KV, children and trace
(`taskhub-pg inspect instance`, the dashboard's instance page)."""

from __future__ import annotations

import json
from typing import Any

from psycopg import sql

from provider.client.catalogue import Catalogue
from provider.client.hub_views import CURRENT_EXECUTION
from provider.client.instance_control import InstanceControl
from provider.client.instance_state import InstanceState
from provider.client.plans import Plan, Rows
from provider.client.reads import Column, Order, Read, Where, columns_of
from provider.config import TaskHubConfig
from provider.errors import InstanceNotFound
from provider.hub_rows import (
    ChildInstance,
    ExecutionRow,
    FailedStep,
    HistoryRow,
    InstanceDeadLetter,
    InstanceFailure,
    InstanceLease,
    InstanceReport,
    InstanceRow,
    KvRow,
    PendingInstance,
    QueuedMessage,
)
from provider.types import JsonObject

# The history events that say what went wrong, and those that scheduled
# what failed (a failure names its scheduling event by source_event_id):
# only these are parsed, the kind read from the event itself (the
# event_type column is the writer's to name).
_FAILURE_KINDS = (
    r'"type"\s*:\s*"(Activity|SubOrchestration|Orchestration)Failed"'
    r'|"type"\s*:\s*"(ActivityScheduled|SubOrchestrationScheduled)"'
)
_FAILED = ("ActivityFailed", "SubOrchestrationFailed", "OrchestrationFailed")
_START = sql.Literal('{"StartOrchestration":')


def _event(operator: str, field: str) -> sql.Composed:
    """A field of the event a history row holds, as the event's JSON says it
    (->> as text, -> as JSON)."""
    return sql.SQL("(event_data::jsonb {} {})").format(sql.SQL(operator), sql.Literal(field))


def _of(instance_id: str) -> tuple[Where, ...]:
    return (Where("instance_id", "=", instance_id),)


def _queued(queue: str, instance_id: str) -> Read:
    return Read(
        f"{queue}_queue",
        columns_of(
            QueuedMessage,
            queue=sql.Literal(queue),
            leased=sql.SQL("lock_token IS NOT NULL"),
            work_item_head=sql.SQL("left(work_item, 120)"),
        ),
        where=_of(instance_id),
        order=(Order("id"),),
    )


class InstanceReports(Catalogue):
    def __init__(self, config: TaskHubConfig) -> None:
        super().__init__(config)
        self._instances = InstanceControl(config)
        self._state = InstanceState(config)

    def read_instance(self, instance_id: str) -> Plan[InstanceReport]:
        """The instance's row, executions, queued messages, leases, dead
        letters and why it failed; InstanceNotFound when there is no trace of it."""
        found = yield from self._read(Read("instances", columns_of(InstanceRow), _of(instance_id)))
        instance: InstanceRow | PendingInstance | None = (
            InstanceRow(**found[0]) if found else (yield from self.pending_instance(instance_id))
        )
        if instance is None:
            raise InstanceNotFound("read_instance", f"instance {instance_id} not found", "P0002")
        executions = yield from self._read(
            Read(
                "executions",
                columns_of(ExecutionRow),
                _of(instance_id),
                order=(Order("execution_id"),),
            )
        )
        to_orchestrator = yield from self._read(_queued("orchestrator", instance_id))
        to_worker = yield from self._read(_queued("worker", instance_id))
        leases = yield from self._read(
            Read("taskhub_current_leases", columns_of(InstanceLease), _of(instance_id))
        )
        letters = yield from self._read(
            Read(
                "dead_letters",
                columns_of(InstanceDeadLetter),
                _of(instance_id),
                order=(Order("dead_at", descending=True),),
            )
        )
        failure = yield from self.read_failure(instance_id)
        return InstanceReport(
            instance=instance,
            executions=[ExecutionRow(**row) for row in executions],
            queued=[QueuedMessage(**row) for row in to_orchestrator + to_worker],
            leases=[InstanceLease(**row) for row in leases],
            dead_letters=[InstanceDeadLetter(**row) for row in letters],
            failure=failure,
        )

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
                _of(instance_id),
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
                (*_of(instance_id), Where("source_queue", "=", "orchestrator")),
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
                    *_of(instance_id),
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

    def history_of(self, instance_id: str, limit: int = 1_000) -> Plan[list[HistoryRow]]:
        """An instance's events, every execution, in order: each event's text
        whole up to 20,000 characters (the timeline reads its type, name, time
        and source from it), and its first 400 characters in any case."""
        rows = yield from self._read(
            Read(
                "history",
                columns_of(
                    HistoryRow,
                    event_head=sql.SQL("left(event_data, 400)"),
                    event_data=sql.SQL("CASE WHEN length(event_data) <= 20000 THEN event_data END"),
                ),
                _of(instance_id),
                order=(Order("execution_id"), Order("event_id")),
                limit=limit,
            )
        )
        return [HistoryRow(**row) for row in rows]

    def kv_of(self, instance_id: str) -> Plan[list[KvRow]]:
        """The instance's KV, by key, each value's first 400 characters."""
        rows = yield from self._read(
            Read(
                "kv_store",
                columns_of(KvRow, value=sql.SQL("left(value, 400)")),
                _of(instance_id),
                order=(Order("key"),),
            )
        )
        return [KvRow(**row) for row in rows]

    def children_of(self, instance_id: str) -> Plan[list[ChildInstance]]:
        """Its sub-orchestrations, oldest first (200 at most)."""
        rows = yield from self._read(
            Read(
                "instances",
                columns_of(ChildInstance),
                (Where("parent_instance_id", "=", instance_id),),
                order=(Order("created_at"), Order("instance_id")),
                limit=200,
            )
        )
        return [ChildInstance(**row) for row in rows]

    def trace_id_of(self, instance_id: str) -> Plan[str | None]:
        """The W3C trace id the instance's work continues (its own context,
        else its nearest traced ancestor's); None without one, or on a hub
        older than revision 0019, which keeps none."""
        if not (yield from self.has_function("taskhub_trace_context(text)")):
            return None
        context = yield from self._state.trace_context(instance_id)
        return None if context is None else context.traceparent.split("-")[1]

    def instance_exists(self, instance_id: str) -> Plan[bool]:
        """Started, or known by queued messages (what delete-instance can delete)."""
        for relation in ("instances", "orchestrator_queue"):
            found = yield from self._read(
                Read(relation, (Column("instance_id"),), _of(instance_id), limit=1)
            )
            if found:
                return True
        return False

    def instance_status(self, instance_id: str) -> Plan[str | None]:
        """The instance's status as `inspect instances` shows it (Pending:
        known only by its queued messages; Running until its execution row
        is written); None when there is no such instance."""
        found = yield from self._instances.find_instances(instance_id=instance_id, limit=1)
        return (found[0].status or "Running") if found else None

    def orchestrator_messages(self, instance_id: str) -> Plan[list[JsonObject]]:
        """The work items on the orchestrator queue for an instance, oldest first."""
        rows = yield from self._read(
            Read(
                "orchestrator_queue", (Column("work_item"),), _of(instance_id), order=(Order("id"),)
            )
        )
        return [json.loads(row["work_item"]) for row in rows]


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
