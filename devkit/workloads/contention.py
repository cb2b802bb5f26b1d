"""The contended orchestration workload of the seed report (reproduction B).

Many dispatchers, a few hot instances with large histories, a short lock
timeout and a steady stream of messages. Every dispatcher loops: fetch, check
that the lease it got is still valid, do a short turn, ack with one new event.

The workload speaks only the contract's SQL functions, so it runs unchanged
against our schema and against one created by duroxide 0.2.2. It is shared by
the regression test, the `make run` demo and the benchmark.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from devkit.workloads.measure import LAST_EVENT_SQL, Latencies, now_ms

NOW_MS_SQL = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


@dataclass(frozen=True)
class ContentionSettings:
    dispatchers: int = 16
    hot_instances: int = 4
    history_events: int = 2_000
    event_payload_bytes: int = 150  # the data of each history event
    lock_timeout_ms: int = 1_000
    duration_s: float = 4.0
    turn_ms: float = 2.0  # work a turn does between fetch and ack
    message_interval_ms: float = 2.0  # the steady stream of new messages
    empty_poll_sleep_ms: float = 10.0  # a dispatcher's pause after finding nothing
    statement_timeout_ms: int = 5_000


@dataclass
class ContentionResult:
    settings: ContentionSettings
    elapsed_s: float = 0.0
    turns: int = 0
    empty_fetches: int = 0
    messages_sent: int = 0
    expired_leases: int = 0
    # The least lease a dispatcher had left when its row arrived (client clock)...
    min_lease_remaining_ms: int | None = None
    # ... and the least a fetch handed out, by the server's clock as the row
    # left the fetch: what the schema decides, without the loaded client's
    # own wait for a core.
    min_lease_handed_ms: int | None = None
    # Where, in a fetch's own time by the server's clock, its lease began (0:
    # at its start, 1: as its row left), one per fetch: late when the lease
    # is computed last, near 0 when it is fixed before the history is read.
    # Unlike the milliseconds left, much the same on a loaded machine.
    lease_positions: list[float] = field(default_factory=list)
    ack_failures: int = 0
    deadlocks: int = 0
    timeouts: int = 0
    other_errors: list[str] = field(default_factory=list)
    fetch_latency: Latencies = field(default_factory=Latencies)
    max_attempt_count: int = 0

    @property
    def errors(self) -> int:
        return self.deadlocks + self.timeouts + len(self.other_errors)

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.elapsed_s if self.elapsed_s else 0.0

    def latency_ms(self, quantile: float) -> float:
        return self.fetch_latency.quantile(quantile)

    def lease_position(self, quantile: float) -> float:
        """Where the fetches' leases began, at this quantile (0: the earliest)."""
        ordered = sorted(self.lease_positions) or [1.0]
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]

    def summary(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "turns_per_s": round(self.turns_per_second, 1),
            "fetch_p50_ms": round(self.latency_ms(0.50), 2),
            "fetch_p99_ms": round(self.latency_ms(0.99), 2),
            "fetch_max_ms": round(self.fetch_latency.maximum, 2),
            "expired_leases": self.expired_leases,
            "min_lease_remaining_ms": self.min_lease_remaining_ms,
            "min_lease_handed_ms": self.min_lease_handed_ms,
            "min_lease_position": round(self.lease_position(0.0), 3),
            "p10_lease_position": round(self.lease_position(0.1), 3),
            "ack_failures": self.ack_failures,
            "deadlocks": self.deadlocks,
            "timeouts": self.timeouts,
            "other_errors": len(self.other_errors),
            "max_attempt_count": self.max_attempt_count,
        }


def hot_instance_id(n: int) -> str:
    return f"hot-{n:02}"


def _event_json(instance: str, event_id: int, kind: str, **fields: Any) -> str:
    return json.dumps(
        {
            "event_id": event_id,
            "source_event_id": None,
            "instance_id": instance,
            "execution_id": 1,
            "timestamp_ms": now_ms(),
            "duroxide_version": "0.1.32",
            "type": kind,
            **fields,
        }
    )


def seed_hot_instances(conn: psycopg.Connection[Any], schema: str, s: ContentionSettings) -> None:
    """Hot instances with `history_events` events each and one message waiting."""
    q = f'"{schema}"'
    for n in range(s.hot_instances):
        instance = hot_instance_id(n)
        conn.execute(
            f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
            " current_execution_id, created_at, updated_at)"
            " VALUES (%s, 'Hot', '1.0.0', 1, now(), now())",
            [instance],
        )
        conn.execute(
            f"INSERT INTO {q}.executions (instance_id, execution_id, status, started_at)"
            " VALUES (%s, 1, 'Running', now())",
            [instance],
        )
        started = _event_json(
            instance,
            1,
            "OrchestrationStarted",
            name="Hot",
            version="1.0.0",
            input="{}",
            parent_instance=None,
            parent_id=None,
        )
        conn.execute(
            f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
            " created_at) VALUES (%s, 1, 1, 'Event', %s, now())",
            [instance, started],
        )
        # The bulk of the history: external events with a payload of
        # event_payload_bytes (one md5 repeated: it compresses well, as many
        # JSON payloads do).
        conn.execute(
            f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
            " created_at)"
            " SELECT %s, 1, g, 'Event', json_build_object("
            "   'event_id', g, 'source_event_id', NULL, 'instance_id', %s::text, 'execution_id', 1,"
            "   'timestamp_ms', 0, 'duroxide_version', '0.1.32', 'type', 'ExternalEvent',"
            "   'name', 'Ping', 'data', left(repeat(md5(g::text), %s / 32 + 1), %s)), now()"
            " FROM generate_series(2, %s) AS g",
            [instance, instance, s.event_payload_bytes, s.event_payload_bytes, s.history_events],
        )
        _send_message(conn, schema, instance)


def _send_message(conn: psycopg.Connection[Any], schema: str, instance: str) -> None:
    item = json.dumps({"ExternalRaised": {"instance": instance, "name": "Ping", "data": "{}"}})
    conn.execute(f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())', [instance, item])


class _Dispatcher(threading.Thread):
    def __init__(self, url: str, schema: str, s: ContentionSettings, stop_at: float) -> None:
        super().__init__(daemon=True)
        self.url, self.schema, self.s, self.stop_at = url, schema, s, stop_at
        self.result = ContentionResult(s)

    def run(self) -> None:
        q = f'"{self.schema}"'
        # The lease, not the transfer: the history is read and its lease
        # computed by the fetch, but not sent (bench/grid_workload.py sends it,
        # as a runtime receives it). Any form of out_history (jsonb, json).
        fetch = (
            "SELECT out_instance_id, out_lock_token, out_execution_id,"
            " out_history IS NOT NULL, out_attempt_count,"
            # Evaluated as the row leaves the function scan: the fetch is done.
            " (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
            " (extract(epoch FROM statement_timestamp()) * 1000)::bigint"
            f" FROM {q}.fetch_orchestration_item(%s, %s)"
        )
        # The lease as committed and the last event id, read right after the
        # fetch returned (the lease holds: no ack appends meanwhile).
        lease_end = (
            f"SELECT (SELECT locked_until FROM {q}.instance_locks WHERE lock_token = %s),"
            f" ({LAST_EVENT_SQL.format(q=q)})"
        )
        ack = f"SELECT {q}.ack_orchestration_item(%s, %s, %s, %s, '[]', '[]', '{{}}')"
        r = self.result
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"SET statement_timeout = {self.s.statement_timeout_ms}")
            while time.monotonic() < self.stop_at:
                try:
                    started = time.perf_counter()
                    row = conn.execute(fetch, [now_ms(), self.s.lock_timeout_ms]).fetchone()
                    arrived_ms = now_ms()
                    r.fetch_latency.add(started)
                    if row is None:
                        r.empty_fetches += 1
                        time.sleep(self.s.empty_poll_sleep_ms / 1000)
                        continue
                    instance, token, execution_id, _, attempts, handed_at_ms, began_ms = row
                    r.max_attempt_count = max(r.max_attempt_count, attempts)
                    read = conn.execute(lease_end, [token, instance, execution_id]).fetchone()
                    lease, history_len = read or (None, None)  # scalar subqueries: one row
                    history_len = history_len or 0
                    remaining = (lease or 0) - arrived_ms
                    if r.min_lease_remaining_ms is None or remaining < r.min_lease_remaining_ms:
                        r.min_lease_remaining_ms = remaining
                    handed = (lease or 0) - handed_at_ms
                    if r.min_lease_handed_ms is None or handed < r.min_lease_handed_ms:
                        r.min_lease_handed_ms = handed
                    # Where in the fetch's own time the lease began, by the server's
                    # clock: 0 at its start, 1 as its row left.
                    lease_began_ms = (lease or 0) - self.s.lock_timeout_ms
                    fetch_ms = max(handed_at_ms - began_ms, 1)
                    position = (lease_began_ms - began_ms) / fetch_ms
                    r.lease_positions.append(position)
                    if remaining <= 0:
                        r.expired_leases += 1
                    time.sleep(self.s.turn_ms / 1000)
                    event_id = history_len + 1
                    delta = json.dumps(
                        [
                            {
                                "event_id": event_id,
                                "event_type": "Event",
                                "event_data": _event_json(
                                    instance, event_id, "ExternalEvent", name="Ping", data="{}"
                                ),
                            }
                        ]
                    )
                    try:
                        conn.execute(ack, [token, now_ms(), execution_id, delta])
                        r.turns += 1
                    except psycopg.errors.RaiseException:
                        r.ack_failures += 1
                    except psycopg.Error as error:
                        if getattr(error, "sqlstate", None) == "TH001":
                            r.ack_failures += 1
                        else:
                            raise
                except psycopg.errors.DeadlockDetected:
                    r.deadlocks += 1
                except psycopg.errors.QueryCanceled:
                    r.timeouts += 1
                except psycopg.Error as error:
                    r.other_errors.append(f"{type(error).__name__}: {error}".splitlines()[0])


class _Producer(threading.Thread):
    def __init__(self, url: str, schema: str, s: ContentionSettings, stop_at: float) -> None:
        super().__init__(daemon=True)
        self.url, self.schema, self.s, self.stop_at = url, schema, s, stop_at
        self.sent = 0

    def run(self) -> None:
        rng = random.Random(7)
        with psycopg.connect(self.url, autocommit=True) as conn:
            while time.monotonic() < self.stop_at:
                _send_message(
                    conn, self.schema, hot_instance_id(rng.randrange(self.s.hot_instances))
                )
                self.sent += 1
                time.sleep(self.s.message_interval_ms / 1000)


def run_contention(url: str, schema: str, s: ContentionSettings) -> ContentionResult:
    """Run the workload on an already seeded schema and merge the dispatchers' figures."""
    stop_at = time.monotonic() + s.duration_s
    dispatchers = [_Dispatcher(url, schema, s, stop_at) for _ in range(s.dispatchers)]
    producer = _Producer(url, schema, s, stop_at)
    started = time.monotonic()
    for thread in [*dispatchers, producer]:
        thread.start()
    for thread in [*dispatchers, producer]:
        thread.join(timeout=s.duration_s + s.statement_timeout_ms / 1000 + 30)

    total = ContentionResult(s, elapsed_s=time.monotonic() - started, messages_sent=producer.sent)
    for d in dispatchers:
        r = d.result
        total.turns += r.turns
        total.empty_fetches += r.empty_fetches
        total.expired_leases += r.expired_leases
        total.ack_failures += r.ack_failures
        total.deadlocks += r.deadlocks
        total.timeouts += r.timeouts
        total.other_errors += r.other_errors
        total.fetch_latency.extend(r.fetch_latency)
        total.max_attempt_count = max(total.max_attempt_count, r.max_attempt_count)
        total.min_lease_remaining_ms = _least(
            total.min_lease_remaining_ms, r.min_lease_remaining_ms
        )
        total.min_lease_handed_ms = _least(total.min_lease_handed_ms, r.min_lease_handed_ms)
        total.lease_positions += r.lease_positions
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT coalesce(max(attempt_count), 0) FROM "{schema}".orchestrator_queue'
        ).fetchone()
        total.max_attempt_count = max(total.max_attempt_count, int(row[0]) if row else 0)
    return total


def _least(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)
