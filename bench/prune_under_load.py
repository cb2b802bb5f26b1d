"""Retention under load: a backlog of ended instances pruned in batches
(taskhub_prune_ended, what `taskhub-pg prune` calls) while the hub serves.

    python -m bench.prune_under_load [--instances N] [--batch-size B] [--url URL]

It migrates a hub in a fresh taskhub_bench database of an embedded cluster
(or of --url / DATABASE_URL), fills it with N completed root instances (one
in ten with a sub-orchestration; four history events each, in the runtime's
JSON shapes and sizes) by set-based INSERTs, VACUUM ANALYZEs it, and starts
a steady light load through the provider: start_orchestration, then
fetch_orchestration_item / ack_orchestration_item turns of those instances
(each completes at its second turn). The load runs alone first, then beside
the prune, which loops batches back to back until one deletes nothing. It
prints the prune's rate, total time and batch times, the hot path's fetch
and ack latencies before and during the prune, and the hub's size before
and after. The default (50,000) takes about a minute; 1,000,000 about five.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from bench.sides import database_url
from devkit.workloads.measure import Latencies
from provider import ExecutionMetadata, TaskHub
from provider.deploy import migrate

SCHEMA = "prune_bench"
CHUNK = 100_000  # roots per seeding statement
RUNTIME_VERSION = "0.1.32"


def _event(kind: str, event_id: str, fields: str) -> str:
    """SQL of one history event's JSON text, as the runtime writes it."""
    return (
        "json_build_object('event_id', "
        + event_id
        + ", 'source_event_id', "
        + ("NULL" if kind in ("OrchestrationStarted", "ActivityScheduled") else event_id + " - 1")
        + ", 'instance_id', i.id, 'execution_id', 1,"
        " 'timestamp_ms', (extract(epoch FROM i.at) * 1000)::bigint + " + event_id + " * 40,"
        f" 'duroxide_version', '{RUNTIME_VERSION}', 'type', '{kind}', {fields})"
    )


HISTORY = [
    _event(
        "OrchestrationStarted",
        "1",
        "'name', i.name, 'version', '1.0.0',"
        " 'input', json_build_object('order_id', i.g, 'customer', 'customer-' || (i.g %% 9973),"
        "   'items', json_build_array(json_build_object('sku', 'sku-' || (i.g %% 311), 'qty', 2),"
        "   json_build_object('sku', 'sku-' || (i.g %% 127), 'qty', 1)),"
        "   'total_cents', i.g %% 50000)::text,"
        " 'parent_instance', i.parent,"
        " 'parent_id', CASE WHEN i.parent IS NULL THEN NULL ELSE 2 END",
    ),
    _event(
        "ActivityScheduled",
        "2",
        "'name', 'ChargeCard', 'input', json_build_object('order_id', i.g,"
        " 'amount_cents', i.g %% 50000, 'currency', 'EUR', 'card_token', md5(i.id))::text,"
        " 'session_id', NULL, 'tag', NULL",
    ),
    _event(
        "ActivityCompleted",
        "3",
        "'result', json_build_object('charge_id', 'ch_' || md5(i.id || 'c'),"
        " 'status', 'captured', 'authorized_at', i.at)::text",
    ),
    _event(
        "OrchestrationCompleted",
        "4",
        "'output', json_build_object('order_id', i.g, 'status', 'shipped',"
        " 'tracking', 'TRK' || lpad(i.g::text, 12, '0'))::text",
    ),
]


def seed_chunk(conn: psycopg.Connection[Any], first: int, last: int, n: int) -> None:
    """Roots first..last of n: completed over the 30 days before an hour ago
    (root g older than root g+1); every tenth has one sub-orchestration."""
    q = f'"{SCHEMA}"'
    # Every instance of the chunk: (g, id, parent, name, created at).
    instances = (
        "SELECT g, 'order-' || g AS id, NULL::text AS parent, 'Checkout' AS name,"
        "       now() - interval '1 hour' - (%(n)s::int - g) * interval '30 days' / %(n)s AS at"
        "  FROM generate_series(%(first)s::int, %(last)s::int) AS g"
        " UNION ALL"
        " SELECT g, 'order-' || g || '::sub::2', 'order-' || g, 'Ship',"
        "       now() - interval '1 hour' - (%(n)s::int - g) * interval '30 days' / %(n)s"
        "       + interval '50 milliseconds'"
        "  FROM generate_series(%(first)s::int, %(last)s::int) AS g WHERE g %% 10 = 0"
    )
    params = {"first": first, "last": last, "n": n}
    with conn.transaction():
        conn.execute(
            f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
            " current_execution_id, created_at, updated_at, parent_instance_id)"
            f" SELECT i.id, i.name, '1.0.0', 1, i.at, i.at + interval '200 milliseconds',"
            f"        i.parent FROM ({instances}) AS i",
            params,
        )
        conn.execute(
            f"INSERT INTO {q}.executions (instance_id, execution_id, status, output, started_at,"
            " completed_at, duroxide_version_major, duroxide_version_minor,"
            " duroxide_version_patch)"
            " SELECT i.id, 1, CASE WHEN i.g %% 20 = 7 THEN 'Failed' ELSE 'Completed' END,"
            "        json_build_object('order_id', i.g, 'status', 'shipped')::text,"
            "        i.at, i.at + interval '200 milliseconds', 0, 1, 32"
            f"   FROM ({instances}) AS i",
            params,
        )
        conn.execute(
            f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type,"
            " event_data, created_at)"
            " SELECT i.id, 1, e.event_id, 'Event', e.data, i.at + e.event_id * interval '40 ms'"
            f"   FROM ({instances}) AS i"
            "  CROSS JOIN LATERAL (VALUES "
            + ", ".join(f"({n + 1}, {sql})" for n, sql in enumerate(HISTORY))
            + ") AS e (event_id, data)",
            params,
        )


def seed(conn: psycopg.Connection[Any], n: int) -> None:
    for first in range(1, n + 1, CHUNK):
        seed_chunk(conn, first, min(first + CHUNK - 1, n), n)
        print(f"  seeded {min(first + CHUNK - 1, n):,} of {n:,} roots", flush=True)


def hub_size(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """Rows (the seeded ones apart) and bytes of the hub's tables."""
    q = f'"{SCHEMA}"'
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM {q}.instances),"
        f" (SELECT count(*) FROM {q}.instances WHERE instance_id LIKE 'order-%%'),"
        f" (SELECT count(*) FROM {q}.history),"
        " (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c"
        "   WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r')",
        [SCHEMA],
    ).fetchone()
    assert row is not None
    return {"instances": row[0], "seeded": row[1], "history": row[2], "bytes": int(row[3])}


def _size_text(size: dict[str, int]) -> str:
    return (
        f"{size['instances']:,} instances ({size['seeded']:,} seeded),"
        f" {size['history']:,} history rows, {size['bytes'] / 2**20:,.0f} MiB"
    )


# -- the hot path -------------------------------------------------------------


@dataclass
class Load:
    """Light steady traffic through the provider: one thread starts an
    instance every `start_interval_s`, `dispatchers` threads fetch and ack
    its turns; an instance completes at its `turns_per_instance`-th turn."""

    hub: TaskHub
    dispatchers: int = 2
    start_interval_s: float = 0.02  # about 50 starts a second
    turns_per_instance: int = 2
    phase: str = "warm-up"
    stop: threading.Event = field(default_factory=threading.Event)
    fetch: dict[str, Latencies] = field(default_factory=dict)
    ack: dict[str, Latencies] = field(default_factory=dict)
    completed: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        self.threads = [threading.Thread(target=self._starter, daemon=True)]
        self.threads += [
            threading.Thread(target=self._dispatcher, daemon=True) for _ in range(self.dispatchers)
        ]
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _starter(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self.stop.is_set():
            n += 1
            try:
                self.hub.start_orchestration(f"live-{n}", "Live", {"n": n}, "1.0.0")
            except Exception as error:  # reported at the end
                self.errors.append(f"start: {error}")
            next_at += self.start_interval_s
            self.stop.wait(max(0.0, next_at - time.monotonic()))

    def _dispatcher(self) -> None:
        while not self.stop.is_set():
            phase = self.phase
            started = time.perf_counter()
            try:
                item = self.hub.fetch_orchestration_item(30_000)
            except Exception as error:
                self.errors.append(f"fetch: {error}")
                continue
            self.fetch.setdefault(phase, Latencies()).add(started)
            if item is None:
                self.stop.wait(0.005)
                continue
            turn = len(item.history) // 2 + 1
            done = turn >= self.turns_per_instance
            history = _turn_events(item.instance_id, len(item.history), done)
            started = time.perf_counter()
            try:
                self.hub.ack_orchestration_item(
                    item.lock_token,
                    item.execution_id,
                    history_delta=history,
                    orchestrator_items=[] if done else [_poke(item.instance_id)],
                    metadata=ExecutionMetadata(
                        orchestration_name="Live",
                        orchestration_version="1.0.0",
                        status="Completed" if done else None,
                        output='"done"' if done else None,
                    ),
                )
            except Exception as error:
                self.errors.append(f"ack: {error}")
                continue
            self.ack.setdefault(phase, Latencies()).add(started)
            if done:
                self.completed[phase] = self.completed.get(phase, 0) + 1


def _turn_events(instance: str, known: int, done: bool) -> list[dict[str, Any]]:
    """Two events a turn: started (first turn) or an event received, then an
    activity's completion or the orchestration's."""
    base = {
        "source_event_id": None,
        "instance_id": instance,
        "execution_id": 1,
        "timestamp_ms": int(time.time() * 1000),
        "duroxide_version": RUNTIME_VERSION,
    }
    if known == 0:
        first = {
            "type": "OrchestrationStarted",
            "name": "Live",
            "version": "1.0.0",
            "input": '{"n": 1}',
            "parent_instance": None,
            "parent_id": None,
        }
    else:
        first = {"type": "ExternalEvent", "name": "Poke", "data": json.dumps({"step": known})}
    second = (
        {"type": "OrchestrationCompleted", "output": '"done"'}
        if done
        else {"type": "TimerCreated", "fire_at_ms": int(time.time() * 1000) + 1000}
    )
    return [
        {**base, "event_id": known + 1, **first},
        {**base, "event_id": known + 2, **second},
    ]


def _poke(instance: str) -> dict[str, Any]:
    return {"ExternalRaised": {"instance": instance, "name": "Poke", "data": "{}"}}


# -- the prune ------------------------------------------------------------------


@dataclass
class PruneRun:
    batches: int = 0
    roots: int = 0
    instances: int = 0
    events: int = 0
    seconds: float = 0.0
    longest_batch_s: float = 0.0
    batch_times: list[float] = field(default_factory=list)


def prune(hub: TaskHub, cutoff_ms: int, batch_size: int, every: int) -> PruneRun:
    run = PruneRun()
    started = time.perf_counter()
    while True:
        batch_started = time.perf_counter()
        batch = hub.prune_ended(cutoff_ms, batch_size=batch_size)
        took = time.perf_counter() - batch_started
        run.batch_times.append(took)
        run.longest_batch_s = max(run.longest_batch_s, took)
        if batch.roots_deleted == 0:
            break
        run.batches += 1
        run.roots += batch.roots_deleted
        run.instances += batch.instances_deleted
        run.events += batch.events_deleted
        if run.batches % every == 0:
            elapsed = time.perf_counter() - started
            print(
                f"  batch {run.batches}: {run.roots:,} roots in {elapsed:.1f} s"
                f" ({run.roots / elapsed:,.0f}/s), this batch {took * 1000:.0f} ms",
                flush=True,
            )
    run.seconds = time.perf_counter() - started
    return run


def _latency_line(name: str, phase: str, samples: Latencies | None) -> str:
    if samples is None or not samples.samples_ms:
        return f"  {name:<6} {phase:<14} no samples"
    return (
        f"  {name:<6} {phase:<14} n={len(samples.samples_ms):>6}"
        f"  p50 {samples.median:7.2f} ms  p99 {samples.quantile(0.99):7.2f} ms"
        f"  max {samples.maximum:8.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a server to use (default: DATABASE_URL, else embedded)")
    parser.add_argument("--instances", type=int, default=50_000, help="ended roots to prune")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--baseline-s", type=float, default=15.0, help="the load alone, first")
    parser.add_argument("--dispatchers", type=int, default=2)
    parser.add_argument("--starts-per-s", type=float, default=50.0)
    args = parser.parse_args()

    url, cluster = database_url(args.url)
    if cluster is not None:
        with psycopg.connect(url, autocommit=True) as conn:
            # Sized like a small production server rather than as initdb leaves it.
            conn.execute("ALTER SYSTEM SET shared_buffers = '1GB'")
            conn.execute("ALTER SYSTEM SET max_wal_size = '4GB'")
        cluster.restart()
    try:
        run_bench(url, args)
    finally:
        if cluster is not None:
            cluster.stop()


def run_bench(url: str, args: argparse.Namespace) -> None:
    migrate.upgrade(url, SCHEMA)
    with psycopg.connect(url, autocommit=True) as conn:
        started = time.perf_counter()
        seed(conn, args.instances)
        seeded = time.perf_counter() - started
        conn.execute(
            f'VACUUM ANALYZE "{SCHEMA}".instances, "{SCHEMA}".executions, "{SCHEMA}".history'
        )
        before = hub_size(conn)
    cutoff_ms = int(time.time() * 1000) - 1000  # every seeded instance ended an hour ago
    print(
        f"hub {SCHEMA}: {args.instances:,} ended roots, {_size_text(before)}"
        f" (seeded in {seeded:.0f} s, then VACUUM ANALYZE)"
    )

    with TaskHub.connect(url, SCHEMA, pool_min_size=4, pool_max_size=8) as hub:
        load = Load(hub, dispatchers=args.dispatchers, start_interval_s=1 / args.starts_per_s)
        load.start()
        time.sleep(5.0)  # warm-up: pools, plans
        load.phase = "before prune"
        time.sleep(args.baseline_s)
        load.phase = "during prune"
        with TaskHub.connect(url, SCHEMA, pool_min_size=1) as pruner:
            run = prune(pruner, cutoff_ms, args.batch_size, every=max(1, 20_000 // args.batch_size))
        load.phase = "after"
        load.finish()

    with psycopg.connect(url, autocommit=True) as conn:
        after = hub_size(conn)
    ordered = sorted(run.batch_times)
    print()
    print(
        f"prune: {run.roots:,} roots ({run.instances:,} instances, {run.events:,} events)"
        f" in {run.batches:,} batches of {args.batch_size} in {run.seconds:.1f} s:"
        f" {run.roots / run.seconds:,.0f} roots/s"
    )
    print(
        f"  batch time p50 {ordered[len(ordered) // 2] * 1000:.0f} ms,"
        f" p99 {ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000:.0f} ms,"
        f" longest {run.longest_batch_s * 1000:.0f} ms"
    )
    tenth = max(1, len(run.batch_times) // 10)
    first, last = sorted(run.batch_times[:tenth]), sorted(run.batch_times[-tenth - 1 : -1] or [0])
    print(
        f"  batch time p50, first tenth of the batches {first[len(first) // 2] * 1000:.0f} ms,"
        f" last tenth {last[len(last) // 2] * 1000:.0f} ms"
    )
    print(
        f"hot path (provider calls, {load.dispatchers} dispatchers,"
        f" {1 / load.start_interval_s:.0f} starts/s, {load.turns_per_instance} turns each):"
    )
    for phase in ("before prune", "during prune"):
        print(_latency_line("fetch", phase, load.fetch.get(phase)))
        print(_latency_line("ack", phase, load.ack.get(phase)))
    for phase in ("before prune", "during prune"):
        seconds = args.baseline_s if phase == "before prune" else run.seconds
        print(f"  completions {phase}: {load.completed.get(phase, 0) / seconds:,.0f}/s")
    print(f"  errors: {len(load.errors)}" + (f" (first: {load.errors[0]})" if load.errors else ""))
    print(f"hub before: {_size_text(before)}")
    print(f"hub after:  {_size_text(after)} (the live load's instances; the space of")
    print("  deleted rows is reused once vacuumed, not given back to the file system)")


if __name__ == "__main__":
    main()
