"""Many light instances, 8 dispatchers: every turn appends one event and sends
the instance one new message, so the load stays steady. Contract SQL only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from devkit.workloads.measure import (
    LAST_EVENT_SQL,
    Latencies,
    now_ms,
    receive_history_as_text,
    run_threads,
)


@dataclass(frozen=True)
class UniformSettings:
    instances: int = 200
    dispatchers: int = 8
    duration_s: float = 8.0
    lock_timeout_ms: int = 5_000


def seed(conn: psycopg.Connection[Any], schema: str, s: UniformSettings) -> None:
    for n in range(s.instances):
        instance = f"light-{n:04}"
        item = json.dumps({"ExternalRaised": {"instance": instance, "name": "Go", "data": "{}"}})
        conn.execute(
            f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())', [instance, item]
        )


def run(url: str, schema: str, s: UniformSettings) -> dict[str, float]:
    with psycopg.connect(url, autocommit=True) as conn:
        seed(conn, schema, s)
    q = f'"{schema}"'
    # The turn as a runtime receives it; the next event id from the history.
    fetch = (
        "SELECT out_instance_id, out_lock_token, out_execution_id, out_history"
        f" FROM {q}.fetch_orchestration_item(%s, %s)"
    )
    last_event = LAST_EVENT_SQL.format(q=q)
    ack = f"SELECT {q}.ack_orchestration_item(%s, %s, %s, %s, '[]', %s, '{{}}')"
    stop_at = time.monotonic() + s.duration_s
    turns = [0] * s.dispatchers
    errors = [0] * s.dispatchers
    latencies = [Latencies() for _ in range(s.dispatchers)]

    def dispatcher(n: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            receive_history_as_text(conn)
            while time.monotonic() < stop_at:
                try:
                    started = time.perf_counter()
                    row = conn.execute(fetch, [now_ms(), s.lock_timeout_ms]).fetchone()
                    latencies[n].add(started)
                    if row is None:
                        time.sleep(0.005)
                        continue
                    instance, token, execution, _ = row
                    last = conn.execute(last_event, [instance, execution]).fetchone()
                    history = (last[0] if last else None) or 0
                    event = {
                        "event_id": history + 1,
                        "event_type": "Event",
                        "event_data": json.dumps(
                            {
                                "event_id": history + 1,
                                "type": "ExternalEvent",
                                "name": "Go",
                                "data": "{}",
                            }
                        ),
                    }
                    again = {"ExternalRaised": {"instance": instance, "name": "Go", "data": "{}"}}
                    conn.execute(
                        ack, [token, now_ms(), execution, json.dumps([event]), json.dumps([again])]
                    )
                    turns[n] += 1
                except psycopg.Error:
                    errors[n] += 1

    elapsed = run_threads(s.dispatchers, dispatcher)
    merged = Latencies.merged(latencies)
    return {
        "turns_per_s": sum(turns) / elapsed,
        "fetch_p50_ms": merged.median,
        "fetch_p99_ms": merged.quantile(0.99),
        "errors": float(sum(errors)),
    }
