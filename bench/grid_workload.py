"""One cell of the hot-path grid: dispatchers running orchestration turns on
light and hot instances, measuring the lease each fetch hands out where the
client receives it. Contract SQL only, so it runs on both schemas.

Every turn: fetch (the whole row, history included, taken as text so that the
Python parse is not counted), read the lease end of the token, ack with one
new event and one message to the same instance (the load stays steady).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from devkit.workloads.contention import ContentionSettings, seed_hot_instances
from devkit.workloads.measure import (
    LAST_EVENT_SQL,
    Latencies,
    now_ms,
    receive_history_as_text,
)


@dataclass(frozen=True)
class Cell:
    kind: str  # "light" or "hot"
    dispatchers: int
    light_instances: int
    lock_timeout_ms: int
    hot_instances: int = 0
    history_events: int = 0
    payload_bytes: int = 0

    @property
    def key(self) -> str:
        """A short name to pick the cell with (bench.grid --only)."""
        lock = f"{self.lock_timeout_ms // 1000}s"
        if self.kind == "light":
            return f"light-{self.dispatchers}x{self.light_instances}-{lock}"
        return f"hot-{self.hot_instances}x{self.history_events}x{self.payload_bytes}-{lock}"

    @property
    def label(self) -> str:
        lock = f"{self.lock_timeout_ms // 1000} s lock"
        if self.kind == "light":
            return f"light {self.dispatchers} disp x {self.light_instances:,} inst, {lock}"
        return (
            f"hot {self.hot_instances} x {self.history_events:,} ev x {self.payload_bytes:,} B"
            f" (+{self.light_instances} light, {self.dispatchers} disp), {lock}"
        )


@dataclass
class CellResult:
    turns: int = 0
    elapsed_s: float = 0.0
    expired_leases: int = 0
    ack_failures: int = 0
    errors: int = 0
    min_lease_left_ms: float | None = None
    fetch_latency: Latencies = field(default_factory=Latencies)

    def merge(self, other: CellResult) -> None:
        self.turns += other.turns
        self.expired_leases += other.expired_leases
        self.ack_failures += other.ack_failures
        self.errors += other.errors
        self.fetch_latency.extend(other.fetch_latency)
        lefts = [m for m in (self.min_lease_left_ms, other.min_lease_left_ms) if m is not None]
        self.min_lease_left_ms = min(lefts) if lefts else None

    def metrics(self, lock_timeout_ms: int) -> dict[str, float]:
        left = self.min_lease_left_ms
        return {
            "turns_per_s": self.turns / self.elapsed_s if self.elapsed_s else 0.0,
            "fetch_p50_ms": self.fetch_latency.quantile(0.5),
            "fetch_p99_ms": self.fetch_latency.quantile(0.99),
            "fetch_max_ms": self.fetch_latency.maximum,
            "min_lease_left_share": (left / lock_timeout_ms) if left is not None else 0.0,
            "expired_leases": float(self.expired_leases),
            "ack_failures": float(self.ack_failures),
            "errors": float(self.errors),
        }


def _message(instance: str) -> str:
    return json.dumps({"ExternalRaised": {"instance": instance, "name": "Go", "data": "{}"}})


def seed_light_instances(conn: psycopg.Connection[Any], schema: str, count: int) -> None:
    """`count` running instances with a one-event history and one message each."""
    q = f'"{schema}"'
    ids = f"SELECT 'light-' || g AS id FROM generate_series(1, {int(count)}) AS g"
    conn.execute(
        f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
        f" current_execution_id, created_at, updated_at)"
        f" SELECT id, 'Light', '1.0.0', 1, now(), now() FROM ({ids}) AS i"
    )
    conn.execute(
        f"INSERT INTO {q}.executions (instance_id, execution_id, status, started_at)"
        f" SELECT id, 1, 'Running', now() FROM ({ids}) AS i"
    )
    conn.execute(
        f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
        f" created_at)"
        f" SELECT id, 1, 1, 'Event', json_build_object('event_id', 1, 'type',"
        f" 'OrchestrationStarted', 'name', 'Light', 'version', '1.0.0', 'input', '{{}}'),"
        f" now() FROM ({ids}) AS i"
    )
    conn.execute(
        f"SELECT {q}.enqueue_orchestrator_work(id, json_build_object('ExternalRaised',"
        f" json_build_object('instance', id, 'name', 'Go', 'data', '{{}}'))::text, now())"
        f" FROM ({ids}) AS i"
    )


def seed(conn: psycopg.Connection[Any], schema: str, cell: Cell) -> None:
    seed_light_instances(conn, schema, cell.light_instances)
    if cell.hot_instances:
        seed_hot_instances(
            conn,
            schema,
            ContentionSettings(
                hot_instances=cell.hot_instances,
                history_events=cell.history_events,
                event_payload_bytes=cell.payload_bytes,
            ),
        )
    conn.execute(f'ANALYZE "{schema}".history, "{schema}".orchestrator_queue')


def _dispatch(url: str, schema: str, cell: Cell, stop_at: float, result: CellResult) -> None:
    q = f'"{schema}"'
    fetch = (
        "SELECT out_instance_id, out_lock_token, out_execution_id, out_history"
        f" FROM {q}.fetch_orchestration_item(%s, %s)"
    )
    # The lease as committed and the last event id, read right after the fetch
    # (the lease held, so no ack can append meanwhile): counting the events of
    # out_history would depend on its type (jsonb, or json on a later head).
    lease_end = (
        f"SELECT (SELECT locked_until FROM {q}.instance_locks WHERE lock_token = %s),"
        f" ({LAST_EVENT_SQL.format(q=q)})"
    )
    ack = f"SELECT {q}.ack_orchestration_item(%s, %s, %s, %s, '[]', %s, '{{}}')"
    with psycopg.connect(url, autocommit=True) as conn:
        receive_history_as_text(conn)
        conn.execute("SET statement_timeout = 10000")
        while time.monotonic() < stop_at:
            try:
                started = time.perf_counter()
                row = conn.execute(fetch, [now_ms(), cell.lock_timeout_ms]).fetchone()
                arrived_ms = now_ms()
                result.fetch_latency.add(started)
                if row is None:
                    time.sleep(0.002)
                    continue
                instance, token, execution, _ = row
                read = conn.execute(lease_end, [token, instance, execution]).fetchone()
                lease, events = read or (None, None)  # scalar subqueries: one row
                left = (lease or 0) - arrived_ms
                events = events or 0
                if result.min_lease_left_ms is None or left < result.min_lease_left_ms:
                    result.min_lease_left_ms = left
                if left <= 0:
                    result.expired_leases += 1
                event = {
                    "event_id": events + 1,
                    "event_type": "Event",
                    "event_data": json.dumps(
                        {"event_id": events + 1, "type": "ExternalEvent", "name": "Go"}
                    ),
                }
                try:
                    delta, messages = json.dumps([event]), f"[{_message(instance)}]"
                    conn.execute(ack, [token, now_ms(), execution, delta, messages])
                    result.turns += 1
                except psycopg.Error as error:
                    if error.sqlstate == "TH001" or "lock token" in str(error).lower():
                        result.ack_failures += 1
                    else:
                        raise
            except psycopg.Error:
                result.errors += 1


def run_cell(url: str, schema: str, cell: Cell, duration_s: float) -> dict[str, float]:
    """Seed the (empty) schema for the cell, run it for duration_s, return its metrics."""
    with psycopg.connect(url, autocommit=True) as conn:
        seed(conn, schema, cell)
    stop_at = time.monotonic() + duration_s
    parts = [CellResult() for _ in range(cell.dispatchers)]
    threads = [
        threading.Thread(target=_dispatch, args=(url, schema, cell, stop_at, part), daemon=True)
        for part in parts
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=duration_s + 30)
    total = CellResult(elapsed_s=time.monotonic() - started)
    for part in parts:
        total.merge(part)
    return total.metrics(cell.lock_timeout_ms)
