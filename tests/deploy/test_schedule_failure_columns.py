"""Revision 0029's part for schedules (issue 54): three columns on
taskhub_schedules and a setting, added and taken away under live load
without rewriting the table, the schedules kept both ways."""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from provider.deploy import migrate
from tests.support.db import new_schema_name

T0 = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)
FAILURE_COLUMNS = ["failures", "last_error", "paused_reason"]


def file_node(sql: psycopg.Connection[Any], schema: str) -> int:
    """The file the table's rows are in: a rewrite gives it a new one."""
    row = sql.execute(
        "SELECT pg_relation_filenode(%s::regclass)", [f'"{schema}".taskhub_schedules']
    ).fetchone()
    assert row is not None
    return int(row[0])


def failure_columns(sql: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = sql.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = 'taskhub_schedules'"
        "   AND column_name = ANY (%s) ORDER BY ordinal_position",
        [schema, FAILURE_COLUMNS],
    ).fetchall()
    return [row[0] for row in rows]


def setting(sql: psycopg.Connection[Any], schema: str) -> str | None:
    row = sql.execute(
        f'SELECT value FROM "{schema}".taskhub_settings'
        " WHERE name = 'schedule_pause_after_failures'"
    ).fetchone()
    return None if row is None else str(row[0])


def test_0029_adds_and_drops_the_failure_columns_without_a_rewrite(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("sf")
    migrate.upgrade(database_url, schema, "0028")
    sql.execute(
        f'SELECT "{schema}".taskhub_set_schedule('
        "'nightly', 'Report', '{\"n\": 1}', NULL, '0 2 * * *', NULL, 'UTC', 'skip', %s)",
        [T0],
    )
    before = file_node(sql, schema)

    migrate.upgrade(database_url, schema, "0029")
    assert failure_columns(sql, schema) == FAILURE_COLUMNS
    assert file_node(sql, schema) == before
    rows = sql.execute(
        "SELECT name, input, failures, last_error, paused_reason"
        f' FROM "{schema}".taskhub_read_schedules()'
    ).fetchall()
    assert rows == [("nightly", '{"n": 1}', 0, None, None)]
    assert setting(sql, schema) == "5"

    migrate.downgrade(database_url, schema, "0028")
    assert failure_columns(sql, schema) == []
    assert file_node(sql, schema) == before
    names = sql.execute(f'SELECT name FROM "{schema}".taskhub_list_schedules()').fetchall()
    assert names == [("nightly",)]
    assert setting(sql, schema) is None


def test_a_scheduler_of_0027_fires_on_through_the_upgrade_to_0029(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """Under live load: a scheduler of revision 0027, its two calls prepared
    on its connection, fires ticks while the upgrade runs. Its calls keep
    their arguments and result types (taskhub_list_schedules and
    taskhub_fire_schedule), so none fails for the change, before or after;
    at worst it waits for the migration's brief lock. Each tick starts once."""
    schema = new_schema_name("sl")
    migrate.upgrade(database_url, schema, "0028")
    sql.execute(
        f'SELECT "{schema}".taskhub_set_schedule('
        "'every-second', 'Tick', 'null', NULL, NULL, 1000, 'UTC', 'skip', %s)",
        [T0],
    )
    upgraded = threading.Event()
    failures: list[BaseException] = []
    ticks_taken: list[datetime] = []

    def scheduler_of_0027() -> None:
        tick = T0
        with psycopg.connect(database_url, autocommit=True, prepare_threshold=0) as conn:
            # Until the upgrade is over, then a few more with what it prepared.
            for after in itertools.chain(iter(upgraded.is_set, True), range(5)):
                del after
                tick += timedelta(seconds=1)
                try:
                    conn.execute(f'SELECT * FROM "{schema}".taskhub_list_schedules()').fetchall()
                    row = conn.execute(
                        f'SELECT * FROM "{schema}".taskhub_fire_schedule(%s, %s, true)',
                        ["every-second", tick],
                    ).fetchone()
                except psycopg.Error as error:
                    failures.append(error)
                    return
                if row is not None and row[0]:
                    ticks_taken.append(tick)

    firing = threading.Thread(target=scheduler_of_0027)
    firing.start()
    try:
        migrate.upgrade(database_url, schema, "0029")
    finally:
        upgraded.set()
        firing.join()
    assert failures == []
    queued = sql.execute(f'SELECT count(*) FROM "{schema}".orchestrator_queue').fetchone()
    assert queued == (len(ticks_taken),) and len(ticks_taken) >= 5
