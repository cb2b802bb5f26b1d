"""The hub at a glance, as plans: the runbook's views (docs/ops.md; `taskhub-pg
inspect`, the dashboard's lists, the metrics), what each holds, the upkeep of
the tables that churn, instances by status, completions by minute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from psycopg import sql

from provider.client.plans import Plan, Plans
from provider.client.reads import Column, Join, Order, Read, Where, columns_of
from provider.errors import TaskHubError
from provider.hub_rows import (
    DeadLetter,
    Lease,
    Overview,
    PoisonCandidate,
    QueueHealth,
    ShieldedFailure,
    StuckInstance,
    TableUpkeep,
    ViewRow,
)

R = TypeVar("R", bound=ViewRow, covariant=True)


@dataclass(frozen=True)
class View(Generic[R]):
    """A runbook view (sql/head/operations/, or a table): its rows, in order."""

    relation: str
    row: type[R]
    order: tuple[Order, ...]

    def read(self, limit: int | None = None) -> Read:
        return Read(self.relation, columns_of(self.row), order=self.order, limit=limit)


QUEUES = View("taskhub_queue_health", QueueHealth, (Order("queue"),))
LEASES = View("taskhub_current_leases", Lease, (Order("remaining_ms"),))
POISON = View("taskhub_poison_candidates", PoisonCandidate, (Order("attempt_count", True),))
DEAD_LETTERS = View("dead_letters", DeadLetter, (Order("dead_at", True),))
STUCK = View("taskhub_stuck_instances", StuckInstance, (Order("quiet_for", True),))
SHIELDED = View("shielded_failures", ShieldedFailure, (Order("shielded_at", True),))
# Each read of `taskhub-pg inspect`, and what the status and metrics count.
VIEWS: dict[str, View[ViewRow]] = {
    "queues": QUEUES,
    "leases": LEASES,
    "poison": POISON,
    "dead-letters": DEAD_LETTERS,
    "stuck": STUCK,
    "shielded": SHIELDED,
}

# The tables to watch for upkeep (docs/ops.md, "Maintenance"): those every
# turn and activity churns, then those retention keeps in bounds.
UPKEEP_TABLES = (
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "history",
    "executions",
    "instances",
)
_UPKEEP = columns_of(
    TableUpkeep,
    table_name=sql.SQL("relname"),
    total_bytes=sql.SQL("pg_total_relation_size(relid)"),
    live_rows=sql.SQL("n_live_tup"),
    dead_rows=sql.SQL("n_dead_tup"),
    since_autovacuum_s=sql.SQL("round(extract(epoch FROM now() - last_autovacuum))::bigint"),
    hot_update_pct=sql.SQL("round(100.0 * n_tup_hot_upd / nullif(n_tup_upd, 0))::int"),
)

# How long the dashboard may count instances by status: a hub of millions
# shows "too many to count" instead of a page that waits.
STATUS_COUNT_TIMEOUT_MS = 1000
QUERY_CANCELED = "57014"
_COUNT = Column("count", sql.SQL("count(*)"))
# The current execution of an instance (i), as e: the join of every read
# that asks how an instance stands.
CURRENT_EXECUTION = Join(
    "executions",
    "e",
    (("i.instance_id", "instance_id"), ("i.current_execution_id", "execution_id")),
)


class HubViews(Plans):
    def read_view(self, name: str, limit: int | None = None) -> Plan[list[ViewRow]]:
        """The rows of one of VIEWS, in its order; all of them when limit is None."""
        rows = yield from self.view_rows(VIEWS[name], limit)
        return rows

    def view_rows(self, view: View[R], limit: int | None = None) -> Plan[list[R]]:
        """The rows of `view` (QUEUES, LEASES, ...), typed as its rows."""
        rows = yield from self._read(view.read(limit))
        return [view.row(**row) for row in rows]

    def queue_health(self) -> Plan[list[QueueHealth]]:
        """A row per queue: ready, scheduled and leased messages, the highest
        delivery count, dead letters, the oldest ready message's age."""
        rows = yield from self.view_rows(QUEUES)
        return rows

    def lease_counts(self) -> Plan[dict[tuple[str, bool], int]]:
        """Leases held now, by (kind, still live)."""
        live = Column("live", sql.SQL("remaining_ms > 0"))
        rows = yield from self._read(
            Read(LEASES.relation, (Column("kind"), live, _COUNT), group_by=("kind", "live"))
        )
        return {(str(row["kind"]), bool(row["live"])): int(row["count"]) for row in rows}

    def count_rows(self, name: str) -> Plan[int]:
        """How many rows one of VIEWS holds now."""
        rows = yield from self._read(Read(VIEWS[name].relation, (_COUNT,)))
        return int(rows[0]["count"])

    def table_upkeep(self) -> Plan[list[TableUpkeep]]:
        """A row per table of UPKEEP_TABLES: its size with indexes and TOAST,
        live and dead rows, autovacuum runs and the seconds since the last,
        and the share of its updates that were HOT (PostgreSQL's statistics)."""
        rows = yield from self._read(
            Read(
                "pg_stat_user_tables",
                _UPKEEP,
                where=(
                    Where("schemaname", "=", self.config.schema),
                    Where("relname", "= ANY", list(UPKEEP_TABLES)),
                ),
                catalogue=True,
            )
        )
        found = [TableUpkeep(**row) for row in rows]
        return sorted(found, key=lambda table: UPKEEP_TABLES.index(table.table_name))

    def status_counts(
        self, timeout_ms: int = STATUS_COUNT_TIMEOUT_MS
    ) -> Plan[dict[str, int] | None]:
        """Instances by their current execution's status, and Pending ones
        (known only by queued messages), as taskhub_find_instances tells
        them; None when a count takes longer than timeout_ms."""
        by_status = Read(
            "instances",
            (Column("status", sql.SQL("e.status")), _COUNT),
            alias="i",
            joins=(CURRENT_EXECUTION,),
            group_by=("status",),
            timeout_ms=timeout_ms,
        )
        pending = Read(
            "orchestrator_queue",
            (Column("count", sql.SQL("count(DISTINCT q.instance_id)")),),
            alias="q",
            joins=(Join("instances", "i", (("q.instance_id", "instance_id"),), outer=True),),
            where=(Where("i.instance_id", "IS NULL"),),
            timeout_ms=timeout_ms,
        )
        try:
            rows = yield from self._read(by_status)
            waiting = yield from self._read(pending)
        except TaskHubError as error:
            if error.sqlstate != QUERY_CANCELED:
                raise
            return None
        counts = {str(row["status"]): int(row["count"]) for row in rows}
        return {**counts, "Pending": int(waiting[0]["count"])}

    def completions_per_minute(self, minutes: int) -> Plan[list[int]]:
        """Executions that ended in each of the last `minutes` minutes, the
        current one last (one pass over the window's rows, by minute)."""
        ago = Column(
            "minutes_ago",
            sql.SQL(
                "(extract(epoch FROM date_trunc('minute', now())"
                " - date_trunc('minute', completed_at)) / 60)::int"
            ),
        )
        since = sql.SQL("date_trunc('minute', now()) - {} * interval '1 minute'")
        rows = yield from self._read(
            Read(
                "executions",
                (ago, _COUNT),
                where=(Where("completed_at", ">=", minutes - 1, around=since),),
                group_by=("minutes_ago",),
            )
        )
        counts = {int(row["minutes_ago"]): int(row["count"]) for row in rows}
        return [counts.get(minutes - 1 - n, 0) for n in range(minutes)]

    def overview(self, minutes: int = 30) -> Plan[Overview]:
        """The hub at a glance: what the dashboard's first page shows."""
        queues = yield from self.queue_health()
        leases = yield from self.lease_counts()
        poison = yield from self.count_rows("poison")
        stuck = yield from self.count_rows("stuck")
        dead_letters = yield from self.count_rows("dead-letters")
        shielded = yield from self.count_rows("shielded")
        completions = yield from self.completions_per_minute(minutes)
        tables = yield from self.table_upkeep()
        return Overview(queues, leases, poison, stuck, dead_letters, shielded, completions, tables)
