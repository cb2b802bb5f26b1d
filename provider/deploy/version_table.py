"""Alembic's record of a hub's revision: its table's name (the one
definition: env.py, the revision guard, the status and the gate read it
here) and the reader of what it holds."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

# In the hub's own schema, so an application's alembic_version never meets it.
VERSION_TABLE = "taskhub_pg_alembic_version"


def installed_revision(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """The revision the schema is at; None when no taskhub-pg revision ran."""
    found = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".{VERSION_TABLE}']).fetchone()
    if not found or found[0] is None:
        return None
    row = conn.execute(
        sql.SQL("SELECT version_num FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(VERSION_TABLE)
        )
    ).fetchone()
    return str(row[0]) if row else None
