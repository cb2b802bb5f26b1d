"""Worker-queue throughput: workers fetch and ack activities until the queue
is empty; plain, with sessions, and with tags. Contract SQL only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from devkit.workloads.measure import Latencies, now_ms, run_threads


@dataclass(frozen=True)
class WorkerSettings:
    items: int = 3_000
    workers: int = 8
    variant: str = "plain"  # plain | sessions | tags
    sessions: int = 64
    tags: tuple[str, ...] = ("gpu", "cpu", "io")
    lock_timeout_ms: int = 30_000


def seed(conn: psycopg.Connection[Any], schema: str, s: WorkerSettings) -> None:
    session = "NULL" if s.variant != "sessions" else f"'session-' || (g %% {s.sessions})"
    tag = "NULL"
    if s.variant == "tags":
        tags = ", ".join(f"'{t}'" for t in s.tags)
        tag = f"(ARRAY[{tags}])[1 + g %% {len(s.tags)}]"
    conn.execute(
        f'SELECT "{schema}".enqueue_worker_work('
        "  json_build_object('ActivityExecute', json_build_object("
        "    'instance', 'inst-' || g, 'execution_id', 1, 'id', g,"
        "    'name', 'Work', 'input', '{}'))::text,"
        f"  %s, 'inst-' || g, 1, g, {session}, {tag})"
        " FROM generate_series(1, %s) AS g",
        [now_ms(), s.items],
    )


def run(url: str, schema: str, s: WorkerSettings) -> dict[str, float]:
    with psycopg.connect(url, autocommit=True) as conn:
        seed(conn, schema, s)
    q = f'"{schema}"'
    mode = {"plain": "default_only", "sessions": "default_only", "tags": "tags"}[s.variant]
    fetch = f"SELECT out_work_item, out_lock_token FROM {q}.fetch_work_item(%s, %s, %s, %s, %s, %s)"
    ack = f"SELECT {q}.ack_worker(%s, %s, %s, %s)"
    done = [0] * s.workers
    errors = [0] * s.workers
    latencies = [Latencies() for _ in range(s.workers)]

    def worker(n: int) -> None:
        owner = f"worker-{n}" if s.variant == "sessions" else None
        session_lock = 30_000 if owner else None
        empty_in_a_row = 0
        with psycopg.connect(url, autocommit=True) as conn:
            while empty_in_a_row < 3:
                try:
                    started = time.perf_counter()
                    row = conn.execute(
                        fetch,
                        [now_ms(), s.lock_timeout_ms, owner, session_lock, list(s.tags), mode],
                    ).fetchone()
                    latencies[n].add(started)
                    if row is None:
                        empty_in_a_row += 1
                        time.sleep(0.01)
                        continue
                    empty_in_a_row = 0
                    body = json.loads(row[0])["ActivityExecute"]
                    completion = {
                        "ActivityCompleted": {
                            "instance": body["instance"],
                            "execution_id": 1,
                            "id": body["id"],
                            "result": "null",
                        }
                    }
                    conn.execute(ack, [row[1], body["instance"], json.dumps(completion), now_ms()])
                    done[n] += 1
                except psycopg.Error:
                    errors[n] += 1

    elapsed = run_threads(s.workers, worker)
    merged = Latencies.merged(latencies)
    return {
        "activities_per_s": sum(done) / elapsed,
        "completed": float(sum(done)),
        "fetch_p50_ms": merged.median,
        "fetch_p99_ms": merged.quantile(0.99),
        "errors": float(sum(errors)),
    }
