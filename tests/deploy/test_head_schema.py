"""sql/head/ is the schema as the migrations leave it: a schema built from
head and one built by `alembic upgrade head` have the same functions (body,
SECURITY DEFINER, settings, grants), tables, indexes, constraints, views and
seeded rows."""

from __future__ import annotations

from typing import Any

import psycopg

from devkit.schema import revision_maker
from devkit.schema.catalogue import snapshot
from devkit.schema.head_schema import apply_head
from provider.deploy import migrate
from tests.support.db import new_schema_name


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


def test_make_revision_finds_nothing_to_do_while_head_equals_the_migrations(
    database_url: str,
) -> None:
    assert revision_maker.compare(database_url) == ([], [], [], [])
    assert revision_maker.start_revision("nothing_changed", database_url) == 1
    assert not list(revision_maker.VERSIONS.glob("*_nothing_changed.py"))


def test_make_revision_points_each_function_at_its_newest_released_file() -> None:
    """Read from the function's history alone (provider/deploy/function_history.py)."""
    assert revision_maker.released_file_of("fetch_orchestration_item") == (
        "functions/fetch_orchestration_item/0029.sql"
    )
    assert revision_maker.released_file_of("taskhub_clock_ms") == (
        "functions/taskhub_clock_ms/0007.sql"
    )
    assert revision_maker.released_file_of("taskhub_apply_kv_mutations") == (
        "functions/taskhub_apply_kv_mutations/0008.sql"
    )
    assert revision_maker.next_number() == f"{int(migrate.head_revision()) + 1:04d}"
