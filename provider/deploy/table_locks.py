"""The table locks of a migration run, taken so that a live hub never
deadlocks with it and waits on it only briefly.

A revision that alters or drops a table needs an ACCESS EXCLUSIVE lock on it,
while the runtime's fetches and acks hold weaker locks on the same tables.
Taken one by one in the middle of a run, such locks deadlock with a call that
holds one table and waits for another (revision 0006 did exactly that). So
each revision's tables (`locks_on_upgrade`, `locks_on_downgrade` in its
`sql/revisions/NNNN_name/revision.toml`, which the module reads as
`LOCKS_ON_UPGRADE`, `LOCKS_ON_DOWNGRADE`) are locked
before it runs, an upgrade's first revision taking those of the whole run
(provider/deploy/revision_guard.py):

* in one fixed order, the order in which the hot path reaches the tables;
* under a short `lock_timeout`, so that it gives up long before the server's
  deadlock check would kill a runtime call that waits behind it, and a call
  never waits on a queued lock for longer than that timeout;
* when a lock is not granted in time, the open transaction rolls back and the
  run goes on from there after a backoff with jitter (provider/deploy/runner.py), a
  bounded number of times, and each wait is reported with who held the table.

Every online transaction also checks, before it commits, that it took no
strong lock on a table that existed before and that it did not declare; a
revision that forgot one fails in the test suite, and is rolled back.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from provider.backoff import Backoff
from provider.schema_name import quote_schema

if TYPE_CHECKING:  # the command line reads the policy without loading SQLAlchemy
    from sqlalchemy.engine import Connection

# The order in which the fetch and ack procedures reach the hub's tables;
# tables not named here come after, by name.
HOT_PATH_ORDER = (
    "orchestrator_queue",
    "instance_locks",
    "instances",
    "executions",
    "history",
    "kv_store",
    "kv_delta",
    # fetch_work_item reads the flow rules' summary before its queue, and
    # claims a slot after the item (and before its session).
    "taskhub_flow_summary",
    "worker_queue",
    "taskhub_flow_slots",
    "sessions",
    "taskhub_settings",
    "shielded_failures",
    "dead_letters",
    "taskhub_wakeup_listeners",
)

# Lock modes that conflict with the runtime's own (ROW EXCLUSIVE and weaker).
STRONG_MODES = (
    "ShareUpdateExclusiveLock",
    "ShareLock",
    "ShareRowExclusiveLock",
    "ExclusiveLock",
    "AccessExclusiveLock",
)

LOCK_NOT_AVAILABLE = "55P03"
DEADLOCK_DETECTED = "40P01"


@dataclass(frozen=True)
class LockPolicy:
    """How long a run waits for each table, and how often it tries again."""

    lock_timeout_ms: int = 100
    attempts: int = 15
    backoff_base_s: float = 0.1
    backoff_cap_s: float = 3.0
    # Every ESCALATE_EVERY failed attempts the wait grows by lock_timeout_ms,
    # up to MAX_ESCALATION times it: a table whose holders are merely slow (a
    # loaded machine) is then granted, while a call queued behind the run
    # still waits well under a second. A hub on procedures without the call
    # gate (before 0015, an adopted duroxide schema) can also form a cycle
    # with the run (its ack reaches orchestrator_queue last), which only a
    # rollback breaks: those attempts fail whatever the wait, so the run
    # tries more often than it waits longer.
    ESCALATE_EVERY = 5
    MAX_ESCALATION = 3

    def timeout_ms(self, attempt: int) -> int:
        """The lock_timeout of the n-th attempt (the first ones: lock_timeout_ms)."""
        return self.lock_timeout_ms * min(
            self.MAX_ESCALATION, 1 + (attempt - 1) // self.ESCALATE_EVERY
        )

    def backoff_s(self, failed_attempt: int, rng: random.Random | None = None) -> float:
        """The pause after the n-th failed attempt: exponential, capped, with
        jitter, so that a fleet of deploy jobs does not retry in step."""
        return Backoff(self.backoff_base_s, self.backoff_cap_s).pause_s(failed_attempt, rng)


def in_lock_order(tables: Iterable[str]) -> list[str]:
    rank = {name: position for position, name in enumerate(HOT_PATH_ORDER)}
    return sorted(set(tables), key=lambda name: (rank.get(name, len(rank)), name))


def revision_locks(module: Any, revision: str, is_upgrade: bool) -> list[str]:
    """The tables a revision declares for one direction (every revision
    module declares both lists)."""
    attribute = "LOCKS_ON_UPGRADE" if is_upgrade else "LOCKS_ON_DOWNGRADE"
    if not hasattr(module, attribute):
        raise AttributeError(f"revision {revision} declares no {attribute}")
    return list(getattr(module, attribute))


def declared_tables(steps: Sequence[Any]) -> list[str]:
    """The tables the revision steps of a run declare, in lock order."""
    tables: set[str] = set()
    for step in steps:
        module, revision = step.revision.module, step.revision.revision
        tables.update(revision_locks(module, revision, step.is_upgrade))
    return in_lock_order(tables)


@dataclass(frozen=True)
class Holder:
    """A session that held a lock on a table while a run waited for it."""

    pid: int
    application_name: str
    user: str
    state: str
    mode: str
    transaction_age_s: float | None
    query: str

    def describe(self) -> str:
        age = "" if self.transaction_age_s is None else f" for {self.transaction_age_s:.1f} s"
        app = f" {self.application_name}" if self.application_name else ""
        return f"pid {self.pid}{app} ({self.user}, {self.state}{age}, {self.mode}: {self.query})"


class LockNotTaken(Exception):
    """A table's lock was not granted within the run's lock_timeout."""

    def __init__(self, table: str, waited_ms: float) -> None:
        super().__init__(f"table {table}: not locked within {waited_ms:.0f} ms")
        self.table = table
        self.waited_ms = waited_ms


def sqlstate_of(error: BaseException) -> str | None:
    """The SQLSTATE of a database error, as SQLAlchemy wraps psycopg's."""
    return getattr(getattr(error, "orig", error), "sqlstate", None)


def existing_tables(connection: Connection, schema: str, tables: Sequence[str]) -> list[str]:
    found = connection.exec_driver_sql(
        "SELECT c.relname FROM pg_catalog.pg_class AS c"
        " WHERE c.relnamespace = to_regnamespace(%(schema)s) AND c.relname = ANY(%(tables)s)",
        {"schema": quote_schema(schema), "tables": list(tables)},
    )
    present = {row[0] for row in found}
    return [table for table in tables if table in present]


def lock_tables(connection: Connection, schema: str, tables: Sequence[str]) -> None:
    """LOCK each table in order, under the transaction's lock_timeout; raise
    LockNotTaken naming the first one that was not granted in time."""
    for table in tables:
        started = time.monotonic()
        try:
            connection.exec_driver_sql(
                f"LOCK TABLE {quote_schema(schema)}.{table} IN ACCESS EXCLUSIVE MODE"
            )
        except Exception as error:
            if sqlstate_of(error) != LOCK_NOT_AVAILABLE:
                raise
            raise LockNotTaken(table, (time.monotonic() - started) * 1000) from None


def offline_lock_statement(schema: str, tables: Sequence[str]) -> str:
    """The same locks in a `--sql` script: only the tables that exist when a
    DBA runs it (an upgrade from base creates them)."""
    quoted = quote_schema(schema)
    lines = [
        f"    IF to_regclass('{quoted}.{table}') IS NOT NULL THEN\n"
        f"        LOCK TABLE {quoted}.{table} IN ACCESS EXCLUSIVE MODE;\n"
        "    END IF;"
        for table in tables
    ]
    return "DO $lock$\nBEGIN\n" + "\n".join(lines) + "\nEND\n$lock$"


# Who holds a lock the run waited for: the sessions, oldest transaction first.
_HOLDERS = """
SELECT l.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''),
       coalesce(a.state, ''), l.mode,
       extract(epoch FROM clock_timestamp() - a.xact_start)::float8,
       left(regexp_replace(coalesce(a.query, ''), '\\s+', ' ', 'g'), 120)
  FROM pg_catalog.pg_locks AS l
  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
 WHERE l.granted AND l.pid <> pg_backend_pid() AND {which}
 ORDER BY a.xact_start NULLS LAST, l.pid
 LIMIT 5
"""
_ON_TABLE = "l.locktype = 'relation' AND l.relation = to_regclass(%(table)s)"
# A bigint advisory key is kept as classid (high 32 bits) and objid (low 32 bits).
_ON_GATE = (
    "l.locktype = 'advisory' AND l.objsubid = 1"
    " AND l.classid = ((hashtextextended(%(label)s, 0) >> 32) & 4294967295)::oid"
    " AND l.objid = (hashtextextended(%(label)s, 0) & 4294967295)::oid"
)
CALL_GATE = "the call gate"  # what LockNotTaken names when the gate was not granted


def call_gate_label(schema: str) -> str:
    """The key text of the hub's call gate: the first statement of every gated
    body (docs/architecture.md, "The call gate")."""
    return f"taskhub:{quote_schema(schema)}:calls"


def call_gate_statement(schema: str) -> str:
    """Taken by a run before anything else it changes: every gated call of the
    hub then waits at the gate instead of half-way through a body."""
    return f"SELECT pg_advisory_xact_lock(hashtextextended('{call_gate_label(schema)}', 0))"


def close_call_gate(connection: Connection, schema: str) -> None:
    started = time.monotonic()
    try:
        connection.exec_driver_sql(call_gate_statement(schema))
    except Exception as error:
        if sqlstate_of(error) != LOCK_NOT_AVAILABLE:
            raise
        raise LockNotTaken(CALL_GATE, (time.monotonic() - started) * 1000) from None


def holders(connection: Connection, schema: str, table: str) -> list[Holder]:
    """Who else holds the table (or the call gate) now; run after the failed
    attempt rolled back, on the same connection."""
    if table == CALL_GATE:
        query, parameters = _ON_GATE, {"label": call_gate_label(schema)}
    else:
        query, parameters = _ON_TABLE, {"table": f"{quote_schema(schema)}.{table}"}
    rows = connection.exec_driver_sql(_HOLDERS.format(which=query), parameters)
    return [Holder(*row) for row in rows]


def relations_before(connection: Connection, schema: str) -> dict[int, str]:
    """Every table of the schema before the run, as oid -> the table it
    belongs to (an index, TOAST table or owned sequence counts as its table's).

    Views are left out: the runtime never reads them, and LOCK TABLE on a view
    would lock its base tables too, in the view's order. A revision's DROP or
    CREATE OR REPLACE VIEW waits under the run's lock_timeout like any lock."""
    rows = connection.exec_driver_sql(
        """SELECT c.oid::bigint,
                      coalesce(owner.relname, toast_of.relname, sequence_of.relname, c.relname)
                 FROM pg_catalog.pg_class AS c
                 LEFT JOIN pg_catalog.pg_index AS i ON i.indexrelid = c.oid
                 LEFT JOIN pg_catalog.pg_class AS owner ON owner.oid = i.indrelid
                 LEFT JOIN pg_catalog.pg_class AS toast_of ON toast_of.reltoastrelid = c.oid
                 LEFT JOIN pg_catalog.pg_depend AS d
                        ON d.objid = c.oid AND d.classid = 'pg_class'::regclass
                       AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a'
                       AND c.relkind = 'S'
                 LEFT JOIN pg_catalog.pg_class AS sequence_of ON sequence_of.oid = d.refobjid
                WHERE (c.relnamespace = to_regnamespace(%(schema)s)
                       OR toast_of.relnamespace = to_regnamespace(%(schema)s))
                  AND c.relkind IN ('r', 'p', 'i', 'I', 't', 'S')""",
        {"schema": quote_schema(schema)},
    )
    return {int(oid): str(table) for oid, table in rows}


def undeclared_strong_locks(
    connection: Connection, before: Mapping[int, str], declared: Iterable[str]
) -> list[str]:
    """The tables that existed before the run and that it holds a strong lock
    on without having declared them."""
    rows = connection.exec_driver_sql(
        "SELECT DISTINCT l.relation::bigint FROM pg_catalog.pg_locks AS l"
        " WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND l.granted"
        " AND l.mode = ANY(%(modes)s)",
        {"modes": list(STRONG_MODES)},
    )
    allowed = set(declared)
    found = {before[oid] for (oid,) in rows if oid in before}
    return sorted(found - allowed)
