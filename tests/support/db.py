"""Small SQL helpers for inspecting and contending with a task hub in tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


def new_schema_name(prefix: str = "t") -> str:
    """A schema name no other test uses: each test works in a schema of its own."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def orchestrator_items(conn: psycopg.Connection[Any], schema: str) -> list[dict[str, Any]]:
    """Every work item on the orchestrator queue, oldest first (the completions
    a worker sent, the starts and events a client queued)."""
    rows = conn.execute(f'SELECT work_item FROM "{schema}".orchestrator_queue ORDER BY id')
    return [json.loads(row[0]) for row in rows.fetchall()]


SERVER_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


def lease_remaining_ms(conn: psycopg.Connection[Any], schema: str, lock_token: str) -> int | None:
    """How long the orchestration lease behind lock_token still runs, by the server clock."""
    row = conn.execute(
        f'SELECT locked_until - {SERVER_NOW_MS} FROM "{schema}".instance_locks'
        " WHERE lock_token = %s",
        [lock_token],
    ).fetchone()
    return None if row is None else int(row[0])


def worker_lease_remaining_ms(
    conn: psycopg.Connection[Any], schema: str, lock_token: str
) -> int | None:
    row = conn.execute(
        f'SELECT locked_until - {SERVER_NOW_MS} FROM "{schema}".worker_queue WHERE lock_token = %s',
        [lock_token],
    ).fetchone()
    return None if row is None else int(row[0])


@contextmanager
def open_transaction(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection inside a transaction that is rolled back at the end.

    Whatever it locks stays locked until the block ends: a competing fetcher
    that has not committed yet, or a session holding queue rows.
    """
    with psycopg.connect(url) as conn:
        conn.execute("SET statement_timeout = 10000")
        try:
            yield conn
        finally:
            conn.rollback()
