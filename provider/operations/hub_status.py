"""What `python -m provider status` reports, read from a task hub's schema
on its caller's connection (the command line's, search_path pinned).

Each part is read only when the schema has it (a schema at an early revision,
or not migrated at all, has fewer tables and views), so the status of any
schema can be read. The queues are the runbook's view, read by the caller's
plan (provider/client/hub_views.py `queue_health`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy.version_table import installed_revision
from provider.hub_rows import QueueHealth
from provider.types import FlowRule

# Which schemas hold a hub, from the catalogue alone (no privilege on the
# schemas needed): revision 0001 creates taskhub_settings and a downgrade to
# base drops it; duroxide 0.2.2 creates _duroxide_migrations and instances.
_HUB_SCHEMAS = """
SELECT n.nspname, bool_or(c.relname = 'taskhub_settings')
  FROM pg_catalog.pg_class AS c
  JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
 WHERE c.relname IN ('taskhub_settings', '_duroxide_migrations', 'instances')
   AND c.relkind IN ('r', 'p')
 GROUP BY n.nspname
HAVING bool_or(c.relname = 'taskhub_settings')
    OR count(DISTINCT c.relname) = 2
 ORDER BY 1
"""


@dataclass(frozen=True)
class ShieldedFailures:
    """Transient failures given back instead of failing an orchestration (0007)."""

    policy: str
    last_day: int
    total: int


@dataclass(frozen=True)
class HubStatus:
    schema: str
    revision: str | None  # None: not migrated
    queues: list[QueueHealth] = field(default_factory=list)
    runtime_roles: list[tuple[str, str]] | None = None  # (role, runtime_ddl); None: no table
    shielded_failures: ShieldedFailures | None = None
    flow_rules: list[FlowRule] = field(default_factory=list)  # docs/flow-control.md


@dataclass(frozen=True)
class HubSchema:
    name: str
    adopted: bool  # False: made by duroxide 0.2.2, not migrated by taskhub-pg yet


def hub_schemas(conn: psycopg.Connection[Any]) -> list[HubSchema]:
    """The schemas of the connection's database that hold a task hub, by name."""
    rows = conn.execute(_HUB_SCHEMAS).fetchall()
    return [HubSchema(str(name), bool(adopted)) for name, adopted in rows]


def schema_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute("SELECT to_regnamespace(%s) IS NOT NULL", [f'"{schema}"']).fetchone()
    return bool(row and row[0])


def read_hub_status(
    conn: psycopg.Connection[Any],
    schema: str,
    queues: Callable[[], list[QueueHealth]],
    flow_rules: Callable[[], list[FlowRule]] = list,
) -> HubStatus:
    """The schema's status; `queues` reads its queues where it has the view,
    `flow_rules` its flow rules."""
    return HubStatus(
        schema=schema,
        revision=installed_revision(conn, schema),
        queues=queues() if _has(conn, schema, "taskhub_queue_health") else [],
        runtime_roles=_runtime_roles(conn, schema),
        shielded_failures=_shielded_failures(conn, schema),
        flow_rules=flow_rules() if _has(conn, schema, "taskhub_flow_rules") else [],
    )


def _has(conn: psycopg.Connection[Any], schema: str, relation: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".{relation}']).fetchone()
    return bool(row and row[0])


def _runtime_roles(conn: psycopg.Connection[Any], schema: str) -> list[tuple[str, str]] | None:
    if not _has(conn, schema, "taskhub_runtime_roles"):
        return None
    query = sql.SQL(
        "SELECT role_name, runtime_ddl FROM {}.taskhub_runtime_roles ORDER BY 1"
    ).format(sql.Identifier(schema))
    return [(str(name), str(mode)) for name, mode in conn.execute(query).fetchall()]


def _shielded_failures(conn: psycopg.Connection[Any], schema: str) -> ShieldedFailures | None:
    if not _has(conn, schema, "shielded_failures"):
        return None
    query = sql.SQL(
        "SELECT (SELECT value FROM {0}.taskhub_settings"
        "         WHERE name = 'transient_failure_policy'),"
        "       count(*) FILTER (WHERE shielded_at > now() - interval '1 day'),"
        "       count(*)"
        "  FROM {0}.shielded_failures"
    ).format(sql.Identifier(schema))
    row = conn.execute(query).fetchone()
    assert row is not None
    policy, last_day, total = row
    return ShieldedFailures(str(policy or "retry"), int(last_day), int(total))
