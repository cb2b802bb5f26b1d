"""One instance as an operator looks at it, as plans: its row (or what its
messages say of it, before it starts), executions, queued messages, leases,
dead letters, why it failed, its history, KV, children and trace
(`taskhub-pg inspect instance`, the dashboard's instance page)."""

from __future__ import annotations

import json

from psycopg import sql

from provider.client.catalogue import Catalogue
from provider.client.instance_control import InstanceControl
from provider.client.instance_failure import InstanceFailures
from provider.client.instance_state import InstanceState
from provider.client.pending_instance import PendingInstances
from provider.client.plans import Plan
from provider.client.reads import Column, Order, Read, Where, columns_of
from provider.client.restarts import restart_of_row
from provider.config import TaskHubConfig
from provider.errors import InstanceNotFound
from provider.hub_rows import (
    ChildInstance,
    ExecutionRow,
    HistoryRow,
    InstanceDeadLetter,
    InstanceLease,
    InstanceReport,
    InstanceRow,
    KvRow,
    PendingInstance,
    QueuedMessage,
)
from provider.types import JsonObject


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


class InstanceReports(Catalogue, PendingInstances, InstanceFailures):
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
        restarts = []
        # A hub before 0029 has none; a role without the right reads none.
        if (yield from self.executable(["taskhub_read_restarts"])):
            rows = yield from self._call("taskhub_read_restarts", p_instance_id=instance_id)
            restarts = [restart_of_row(row) for row in rows]
        return InstanceReport(
            instance=instance,
            executions=[ExecutionRow(**row) for row in executions],
            queued=[QueuedMessage(**row) for row in to_orchestrator + to_worker],
            leases=[InstanceLease(**row) for row in leases],
            dead_letters=[InstanceDeadLetter(**row) for row in letters],
            failure=failure,
            restarts=restarts,
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
                    # As text, whether the hub stores it as text or as json.
                    event_head=sql.SQL("left(event_data::text, 400)"),
                    event_data=sql.SQL(
                        "CASE WHEN length(event_data::text) <= 20000 THEN event_data::text END"
                    ),
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
