"""sql/head/ is the schema as the migrations leave it: a schema built from
head and one built by `alembic upgrade head` have the same functions (body,
SECURITY DEFINER, settings, grants), tables, indexes, constraints, views and
seeded rows."""

from __future__ import annotations

from typing import Any

import psycopg

from provider.deploy import migrate
from scripts.catalogue import snapshot
from scripts.head_schema import apply_head
from tests.conftest import new_schema_name


def test_head_builds_the_schema_the_migrations_build(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    migrated = new_schema_name("mg")
    migrate.upgrade(database_url, migrated)
    built = new_schema_name("hd")
    with psycopg.connect(database_url, autocommit=True) as conn:
        apply_head(conn, built)

    from_head, from_migrations = snapshot(sql, built), snapshot(sql, migrated)
    for kind in from_migrations:
        assert from_head[kind] == from_migrations[kind], kind
