"""Which released duroxide runtimes a hub serves, read from its ledger.

The runtime's migration runner reads `_duroxide_migrations` at every start.
It refuses a schema whose ledger holds a version it does not know ("The
database schema is ahead of the code"), and applies each version it knows
that the ledger lacks, which puts its own procedures over ours. So a release
serves a hub when the ledger holds exactly the versions it knows: it starts
and applies nothing. A hub's ledger holds 0.2.2's versions, the newest
(taskhub_duroxide_versions()), so 0.2.1 and 0.2.2 serve it and 0.2.0
refuses it: it does not know 25.

    admission = read(conn, schema)    # what `taskhub-pg check` prints
    admission.line()                  # "duroxide 0.2.1 and 0.2.2 serve this hub ..."

The answer is information, not drift: the check's exit code is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from provider.schema_name import quote_schema


@dataclass(frozen=True)
class Release:
    """A released runtime: the migrations it knows (the ledger it writes on an
    empty schema), and whether its runner sends CREATE SCHEMA IF NOT EXISTS
    at every start. PostgreSQL checks CREATE on the database before it looks
    for the schema, so such a release refuses a login without that right,
    unless the hub is in `public` (which the runner never creates)."""

    version: str
    migrations: frozenset[int]
    creates_schema_at_start: bool


_UP_TO_21 = frozenset(range(1, 22))
# Measured on each release's own ledger and its statements (log_statement).
RELEASES = (
    Release("0.2.0", _UP_TO_21 | {23}, creates_schema_at_start=True),
    Release("0.2.1", _UP_TO_21 | {23, 25}, creates_schema_at_start=True),
    Release("0.2.2", _UP_TO_21 | {23, 25}, creates_schema_at_start=False),
)


@dataclass(frozen=True)
class RuntimeAdmission:
    ledger: list[int]
    serves: list[str]
    # Refuses the hub at startup: the ledger's versions it does not know.
    refuses: dict[str, list[int]] = field(default_factory=dict)
    # Starts, then applies these versions over the hub's procedures.
    would_migrate: dict[str, list[int]] = field(default_factory=dict)
    # Serves the hub, but refuses to start when logged in as these roles
    # (the owner or a runtime role without CREATE on the database).
    refuses_logins: dict[str, list[str]] = field(default_factory=dict)

    def line(self) -> str:
        """One line: who serves the hub, then who refuses it or would migrate it."""
        held = f"(_duroxide_migrations holds {_ranges(self.ledger) or 'nothing'})"
        if self.serves:
            verb = "serves" if len(self.serves) == 1 else "serve"
            parts = [f"duroxide {_and(self.serves)} {verb} this hub {held}"]
        else:
            parts = [f"no released duroxide serves this hub {held}"]
        for release, unknown in self.refuses.items():
            parts.append(f"{release} refuses it at startup (it does not know {_ranges(unknown)})")
        for release, missing in self.would_migrate.items():
            parts.append(
                f"{release} would apply its migrations {_ranges(missing)} over the hub's"
                " procedures (taskhub-pg repair writes them into the ledger)"
            )
        for release, roles in self.refuses_logins.items():
            parts.append(
                f"{release} refuses to start as {', '.join(roles)}, which may not CREATE in"
                " the database (it sends CREATE SCHEMA IF NOT EXISTS at every start)"
            )
        return "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {
            "ledger": self.ledger,
            "serves": self.serves,
            "refuses": self.refuses,
            "would_migrate": self.would_migrate,
            "refuses_logins": self.refuses_logins,
        }


def judge(ledger: Iterable[int], logins_without_create: Iterable[str] = ()) -> RuntimeAdmission:
    """What each release does with a hub whose ledger holds these versions."""
    held = sorted(set(ledger))
    refusing = sorted(logins_without_create)
    admission = RuntimeAdmission(held, [])
    for release in RELEASES:
        unknown = sorted(set(held) - release.migrations)
        missing = sorted(release.migrations - set(held))
        if unknown:
            admission.refuses[release.version] = unknown
        elif missing:
            admission.would_migrate[release.version] = missing
        else:
            admission.serves.append(release.version)
            if release.creates_schema_at_start and refusing:
                admission.refuses_logins[release.version] = refusing
    return admission


def read(conn: psycopg.Connection[Any], schema: str) -> RuntimeAdmission:
    """The hub's ledger, and its owner and runtime roles that may not CREATE
    in the database (none matter for a hub in `public`)."""
    return judge(
        _ledger(conn, schema), [] if schema == "public" else _logins_without_create(conn, schema)
    )


def _ledger(conn: psycopg.Connection[Any], schema: str) -> list[int]:
    """Its versions; none when the table is gone (every release would create
    it and apply each of its migrations)."""
    if not _exists(conn, schema, "_duroxide_migrations"):
        return []
    rows = conn.execute(
        sql.SQL("SELECT version FROM {}._duroxide_migrations").format(sql.Identifier(schema))
    ).fetchall()
    return [int(version) for (version,) in rows]


_WITHOUT_CREATE = """
SELECT r.rolname
  FROM pg_catalog.pg_roles AS r
 WHERE (r.oid = (SELECT n.nspowner FROM pg_catalog.pg_namespace AS n WHERE n.nspname = %s)
        OR r.rolname = ANY (%s))
   AND NOT has_database_privilege(r.oid, current_database(), 'CREATE')
 ORDER BY 1
"""


def _logins_without_create(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    runtime_roles: list[str] = []
    if _exists(conn, schema, "taskhub_runtime_roles"):
        query = sql.SQL("SELECT role_name FROM {}.taskhub_runtime_roles")
        rows = conn.execute(query.format(sql.Identifier(schema))).fetchall()
        runtime_roles = [str(name) for (name,) in rows]
    found = conn.execute(_WITHOUT_CREATE, [schema, runtime_roles]).fetchall()
    return [str(name) for (name,) in found]


def _exists(conn: psycopg.Connection[Any], schema: str, table: str) -> bool:
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", [f"{quote_schema(schema)}.{table}"]
    ).fetchone()
    return bool(row and row[0])


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _ranges(versions: list[int]) -> str:
    """1, 2, 3, 5 as "1-3, 5"."""
    runs: list[list[int]] = []
    for version in sorted(versions):
        if runs and version == runs[-1][-1] + 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
