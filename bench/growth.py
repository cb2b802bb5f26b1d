"""Fetch latency as the queue and the history grow (our schema only).

Queue depth: N visible messages for N instances; each sample is one
fetch + abandon, so the depth stays N. History: one instance whose current
execution holds N events; each sample is one fetch (which returns the whole
history, as the runtime needs it) + abandon.
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg

from devkit.workloads.measure import Latencies, now_ms, receive_history_as_text


def _sample(conn: psycopg.Connection[Any], schema: str, samples: int) -> Latencies:
    q = f'"{schema}"'
    latencies = Latencies()
    receive_history_as_text(conn)  # the turn as a runtime receives it
    for _ in range(samples):
        started = time.perf_counter()
        row = conn.execute(
            f"SELECT out_lock_token, out_history FROM {q}.fetch_orchestration_item(%s, 30000)",
            [now_ms()],
        ).fetchone()
        latencies.add(started)
        assert row is not None, "the queue should never be empty here"
        conn.execute(f"SELECT {q}.abandon_orchestration_item(%s, %s)", [row[0], now_ms()])
    return latencies


def queue_depth(url: str, schema: str, depth: int, samples: int = 50) -> dict[str, float]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".orchestrator_queue'
            " (instance_id, work_item, visible_at, created_at)"
            " SELECT 'deep-' || g, json_build_object('ExternalRaised', json_build_object("
            "   'instance', 'deep-' || g, 'name', 'Ping', 'data', '{}'))::text,"
            "   now() - interval '1 minute' + g * interval '1 microsecond', now()"
            " FROM generate_series(1, %s) AS g",
            [depth],
        )
        conn.execute(f'ANALYZE "{schema}".orchestrator_queue')
        latencies = _sample(conn, schema, samples)
    return {"fetch_p50_ms": latencies.median, "fetch_p99_ms": latencies.quantile(0.99)}


def history_size(url: str, schema: str, events: int, samples: int = 20) -> dict[str, float]:
    instance = f"history-{events}"
    with psycopg.connect(url, autocommit=True) as conn:
        q = f'"{schema}"'
        conn.execute(
            f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
            " current_execution_id, created_at, updated_at)"
            " VALUES (%s, 'Big', '1.0.0', 1, now(), now())",
            [instance],
        )
        conn.execute(
            f"INSERT INTO {q}.executions (instance_id, execution_id, status, started_at)"
            " VALUES (%s, 1, 'Running', now())",
            [instance],
        )
        conn.execute(
            f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
            " created_at) SELECT %s, 1, g, 'Event', json_build_object('event_id', g,"
            " 'type', 'ExternalEvent', 'name', 'Ping', 'data', repeat('x', 150)), now()"
            " FROM generate_series(1, %s) AS g",
            [instance, events],
        )
        conn.execute(
            f"SELECT {q}.enqueue_orchestrator_work(%s, %s, now())",
            [
                instance,
                json.dumps(
                    {"ExternalRaised": {"instance": instance, "name": "Ping", "data": "{}"}}
                ),
            ],
        )
        latencies = _sample(conn, schema, samples)
    return {"fetch_p50_ms": latencies.median, "fetch_p99_ms": latencies.quantile(0.99)}
