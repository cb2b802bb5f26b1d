"""The ceiling: the same client doing the cheapest possible claim-and-delete on
a plain table (one statement per claim, SKIP LOCKED). Every other figure is
also shown as a fraction of this one."""

from __future__ import annotations

from typing import Any

import psycopg

from devkit.workloads.measure import run_threads


def run(url: str, schema: str, items: int = 20_000, workers: int = 8) -> dict[str, float]:
    table = f'"{schema}".ceiling_queue'
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, payload text NOT NULL)")
        conn.execute(
            f"INSERT INTO {table} (payload) SELECT repeat('x', 100) FROM generate_series(1, %s)",
            [items],
        )
    claim = (
        f"DELETE FROM {table} WHERE id = (SELECT id FROM {table} ORDER BY id"
        " LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"
    )
    claimed = [0] * workers

    def worker(n: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while conn.execute(claim).fetchone() is not None:
                claimed[n] += 1

    elapsed = run_threads(workers, worker)
    return {"claims_per_s": sum(claimed) / elapsed}


def drop(conn: psycopg.Connection[Any], schema: str) -> None:
    conn.execute(f'DROP TABLE IF EXISTS "{schema}".ceiling_queue')
