"""What one minute did: completions and their latency, the hub's tables, the
server's connections, and each worker process's memory, threads and
connections. Counters (updates, HOT updates, autovacuum runs) are kept as
the server reports them, cumulative; the report takes their differences."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from drills.soak import workload
from drills.soak.completions import Ended
from drills.soak.retention import PruneRun
from drills.soak.watch import MinuteWatch

# The tables every turn and activity writes: the ones that rot first.
QUEUE_AND_LEASE_TABLES = ("orchestrator_queue", "worker_queue", "instance_locks")


@dataclass(frozen=True)
class TableSample:
    heap: int  # bytes
    indexes: int
    toast: int  # the TOAST table with its index
    live: int
    dead: int
    updates: int  # cumulative, as pg_stat_user_tables counts them
    hot_updates: int
    autovacuums: int

    @property
    def heap_and_indexes(self) -> int:
        return self.heap + self.indexes


@dataclass(frozen=True)
class ProcessSample:
    rss_kb: int
    threads: int


@dataclass
class Minute:
    minute: int  # 1 for the soak's first minute
    seconds: float = 60.0  # how long a "minute" is (shorter in the suite's bounded soak)
    completions: int = 0  # root instances that ended, every kind
    timed_ms: list[float] = field(default_factory=list)  # start-to-completion, TIMED kinds
    ended: Counter[str] = field(default_factory=Counter)  # "kind status" -> count
    tables: dict[str, TableSample] = field(default_factory=dict)
    instances: int = 0
    connections: Counter[str] = field(default_factory=Counter)  # application_name -> count
    processes: dict[str, list[ProcessSample]] = field(default_factory=dict)  # role -> samples
    prunes: list[PruneRun] = field(default_factory=list)  # retention runs ended this minute
    watch: MinuteWatch = field(default_factory=MinuteWatch)  # where the server's time went

    @property
    def rate(self) -> float:
        """Completions per second."""
        return self.completions / self.seconds

    @property
    def autovacuums(self) -> int:
        """Autovacuum runs on any of the hub's tables (cumulative, as counted)."""
        return sum(t.autovacuums for t in self.tables.values())

    @property
    def hub_bytes(self) -> int:
        return sum(t.heap + t.indexes + t.toast for t in self.tables.values())

    @property
    def queue_and_lease_bytes(self) -> int:
        return sum(self.tables[name].heap_and_indexes for name in QUEUE_AND_LEASE_TABLES)

    def unexpected_failures(self) -> int:
        return sum(
            n
            for key, n in self.ended.items()
            if key.endswith(" Failed") and key.split()[0] not in workload.DELIBERATE_FAILURES
        )

    def deliberate_failures(self) -> int:
        return sum(n for key, n in self.ended.items() if key.endswith(" Failed")) - (
            self.unexpected_failures()
        )


def process_sample(pid: int) -> ProcessSample | None:
    """VmRSS and Threads from /proc; None once the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return ProcessSample(int(fields["VmRSS"].split()[0]), int(fields["Threads"]))


class Sampler:
    def __init__(self, url: str, schema: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True, application_name="soak-sampler")
        self._schema = sql.Identifier(schema)
        self._name = schema

    def close(self) -> None:
        self._conn.close()

    def sample(
        self, minute: int, seconds: float, ends: list[Ended], pids: dict[str, list[int]]
    ) -> Minute:
        sample = Minute(minute, seconds)
        self._completions(sample, ends)
        sample.tables = self._tables()
        sample.instances = self._count("instances")
        sample.connections = self._connections()
        for role, role_pids in pids.items():
            found = [process_sample(pid) for pid in role_pids]
            sample.processes[role] = [s for s in found if s is not None]
        return sample

    @staticmethod
    def _completions(sample: Minute, ends: list[Ended]) -> None:
        for end in ends:
            sample.completions += 1
            start = end.started
            kind = start.kind if start else workload.kind_of(int(end.instance.rsplit("-", 1)[1]))
            sample.ended[f"{kind} {end.status}"] += 1
            if start is not None and kind in workload.TIMED and end.status == "Completed":
                sample.timed_ms.append(end.completed_ms - start.at_ms)

    def _tables(self) -> dict[str, TableSample]:
        rows = self._conn.execute(
            "SELECT c.relname, pg_relation_size(c.oid), pg_indexes_size(c.oid),"
            "       coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),"
            "       coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0),"
            "       coalesce(s.n_tup_upd, 0), coalesce(s.n_tup_hot_upd, 0),"
            "       coalesce(s.autovacuum_count, 0)"
            "  FROM pg_class AS c"
            "  JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            "  LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid"
            " WHERE n.nspname = %s AND c.relkind = 'r'",
            [self._name],
        ).fetchall()
        return {row[0]: TableSample(*(int(v) for v in row[1:])) for row in rows}

    def _count(self, table: str) -> int:
        row = self._conn.execute(
            sql.SQL("SELECT count(*) FROM {}.{}").format(self._schema, sql.Identifier(table))
        ).fetchone()
        return int(row[0]) if row else 0

    def _connections(self) -> Counter[str]:
        rows: list[Any] = self._conn.execute(
            "SELECT application_name, count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend' GROUP BY 1"
        ).fetchall()
        return Counter({str(name or "?"): int(n) for name, n in rows})
