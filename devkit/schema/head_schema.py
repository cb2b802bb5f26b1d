"""`sql/head/`: the schema as it is at the newest revision, one file per
object, grouped by concern. Alembic revisions remain what deploys it; head is
what a reader (or a new revision) starts from, and a test keeps the two equal.

    apply_head(conn, schema)   builds a schema from head on an open connection
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from provider.deploy.sql_files import render_sql
from provider.resources import sql_dir

HEAD = "head"
# Tables first: views and SQL-language functions refer to them. Function
# bodies are checked when first called, not when created, so the order of
# the other folders does not matter.
FIRST = "tables"


def head_files() -> list[Path]:
    """Every file of sql/head/, tables first, then each concern's files."""
    root = sql_dir() / HEAD
    folders = sorted(root.iterdir(), key=lambda folder: (folder.name != FIRST, folder.name))
    return [path for folder in folders if folder.is_dir() for path in sorted(folder.glob("*.sql"))]


def apply_head(conn: psycopg.Connection[Any], schema: str) -> None:
    """Create `schema` and build it from sql/head/ in one transaction."""
    with conn.transaction():
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute("SET LOCAL check_function_bodies = off")
        for path in head_files():
            conn.execute(render_sql(str(path.relative_to(sql_dir())), schema))
