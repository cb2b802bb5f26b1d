"""Adopting a task hub that duroxide 0.2.2 created: `alembic upgrade` keeps
every row and replaces the defective procedures; the runtime keeps working;
`downgrade` gives the schema back exactly as duroxide made it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import duroxide
import psycopg

from provider.deploy import migrate
from tests.support.db import new_schema_name

TABLES = ["instances", "executions", "history", "orchestrator_queue", "worker_queue", "kv_store"]


@contextmanager
def running_runtime(url: str, schema: str) -> Iterator[Any]:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))

    @runtime.register_activity("Double")
    def double(ctx: Any, value: int) -> int:
        return value * 2

    @runtime.register_orchestration("DoubleThenWait")
    def double_then_wait(ctx: Any, value: int) -> Any:
        doubled = yield ctx.schedule_activity("Double", value)
        ctx.set_custom_status("waiting for approval")
        approval = yield ctx.wait_for_event("Approve")
        return {"doubled": doubled, "approval": approval}

    runtime.start()
    try:
        yield duroxide.Client(provider)
    finally:
        runtime.shutdown(timeout_ms=2_000)


def row_counts(conn: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".{table}').fetchone()
        counts[table] = int(row[0]) if row else -1
    return counts


def function_fingerprints(conn: psycopg.Connection[Any], schema: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',"
        " md5(pg_get_functiondef(p.oid))"
        " FROM pg_proc p WHERE p.pronamespace = %s::regnamespace",
        [schema],
    ).fetchall()
    return {str(name): str(digest) for name, digest in rows}


def relations(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace ORDER BY 1", [schema]
    ).fetchall()
    return [str(row[0]) for row in rows]


def approve_when_waiting(client: Any, instance: str, approval: str) -> None:
    client.wait_for_status_change(instance, 0, poll_interval_ms=20, timeout_ms=10_000)
    client.raise_event(instance, "Approve", approval)


def wait_completed(client: Any, instance: str) -> Any:
    result = client.wait_for_orchestration(instance, 30_000)
    assert result.status == "Completed", (result.status, result.output)
    return result.output


def test_adopting_a_duroxide_schema_keeps_rows_and_downgrade_restores_it(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("adopt")
    with running_runtime(database_url, schema) as client:
        client.start_orchestration("before-done", "DoubleThenWait", 1)
        approve_when_waiting(client, "before-done", "yes")
        wait_completed(client, "before-done")
        client.start_orchestration("in-flight", "DoubleThenWait", 21)
        client.wait_for_status_change("in-flight", 0, poll_interval_ms=20, timeout_ms=10_000)
    duroxide_functions = function_fingerprints(sql, schema)
    duroxide_relations = relations(sql, schema)
    rows_before = row_counts(sql, schema)
    assert rows_before["history"] > 0

    migrate.upgrade(database_url, schema)

    assert row_counts(sql, schema) == rows_before
    fetch = sql.execute(
        "SELECT pg_get_functiondef(%s::regprocedure)",
        [f'"{schema}".fetch_orchestration_item(bigint, bigint, bigint, bigint)'],
    ).fetchone()
    assert fetch is not None and "pg_try_advisory_xact_lock" in str(fetch[0])
    with running_runtime(database_url, schema) as client:
        client.raise_event("in-flight", "Approve", "after adoption")
        assert wait_completed(client, "in-flight") == {"doubled": 42, "approval": "after adoption"}
        client.start_orchestration("after-adoption", "DoubleThenWait", 5)
        approve_when_waiting(client, "after-adoption", "ok")
        assert wait_completed(client, "after-adoption")["doubled"] == 10
    rows_adopted = row_counts(sql, schema)

    migrate.downgrade(database_url, schema)

    assert function_fingerprints(sql, schema) == duroxide_functions
    assert relations(sql, schema) == duroxide_relations
    assert row_counts(sql, schema) == rows_adopted
    with running_runtime(database_url, schema) as client:
        client.start_orchestration("after-downgrade", "DoubleThenWait", 7)
        approve_when_waiting(client, "after-downgrade", "ok")
        assert wait_completed(client, "after-downgrade")["doubled"] == 14
