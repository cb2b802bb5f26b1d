"""Urgent work behind a backlog (issue 57): `--backlog` low-priority starts
are queued, then the released duroxide runtime starts and `--urgent` starts
of priority 9 follow; printed, how long the urgent ones take to complete,
beside the same run with the urgent starts at priority 0 (no priorities: they
wait behind the backlog), in one run, alternating which side goes first.

    python -m bench.priorities [--backlog 20000] [--urgent 50] [--give-up-s 60]

Each side runs on a fresh schema at head. An orchestration runs one activity;
a start's time to completion is from just before its start call to the
commit of its last turn (the server's clock, on this machine). A side stops
when its urgent instances have completed or after --give-up-s; those left
count as --give-up-s.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import duroxide
import psycopg

from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from devkit.workloads.measure import Latencies
from provider import Client, StartRequest

URGENT_PRIORITY = 9


def _runtime(url: str, schema: str) -> Any:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(
        provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, worker_concurrency=4)
    )

    @runtime.register_activity("Pack")
    def pack(ctx: Any, order: int) -> int:
        return order

    @runtime.register_orchestration("Order")
    def order(ctx: Any, number: int) -> Any:
        packed = yield ctx.schedule_activity("Pack", number)
        return packed

    return runtime


def completed_at(url: str, schema: str, ids: list[str]) -> dict[str, float]:
    """Epoch seconds of each completed instance's end."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            f'SELECT instance_id, extract(epoch FROM completed_at) FROM "{schema}".executions'
            " WHERE instance_id = ANY (%s) AND status = 'Completed'",
            [ids],
        ).fetchall()
    return {str(row[0]): float(row[1]) for row in rows}


def run_side(url: str, backlog: int, urgent: int, priority: int, give_up_s: float) -> list[float]:
    """Seconds from start to completion of each urgent instance."""
    schema = fresh_schema(url, TASKHUB)
    runtime = None
    try:
        with Client.connect(url, schema, statement_timeout_ms=600_000) as client:
            for first in range(0, backlog, 5_000):
                last = min(first + 5_000, backlog)
                client.start_many(
                    [StartRequest(f"low-{n}", "Order", n) for n in range(first, last)]
                )
            runtime = _runtime(url, schema)
            runtime.start()
            started: dict[str, float] = {}
            for n in range(urgent):
                instance = f"urgent-{n}"
                started[instance] = time.time()
                client.start(instance, "Order", n, priority=priority)
            deadline = time.monotonic() + give_up_s
            done: dict[str, float] = {}
            while len(done) < urgent and time.monotonic() < deadline:
                time.sleep(0.05)
                done = completed_at(url, schema, list(started))
        return [
            done[instance] - began if instance in done else give_up_s
            for instance, began in started.items()
        ]
    finally:
        if runtime is not None:
            runtime.shutdown(timeout_ms=2_000)
        drop_schema(url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.priorities")
    parser.add_argument("--backlog", type=int, default=20_000)
    parser.add_argument("--urgent", type=int, default=50)
    parser.add_argument("--give-up-s", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else a private cluster)")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    sides = {f"priority {URGENT_PRIORITY}": URGENT_PRIORITY, "priority 0 (anchor)": 0}
    results: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for round_number in range(args.rounds):
            names = list(sides) if round_number % 2 == 0 else list(reversed(sides))
            for name in names:
                results[name] += run_side(
                    url, args.backlog, args.urgent, sides[name], args.give_up_s
                )
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"{args.urgent} urgent starts behind {args.backlog:,} queued, released runtime 0.2.2")
    print(f"{'':24} {'p50 s':>8} {'p99 s':>8} {'max s':>8} {'not done':>9}")
    for name, seconds in results.items():
        summary = Latencies(seconds)
        left = sum(1 for value in seconds if value >= args.give_up_s)
        print(
            f"{name:24} {summary.median:8.2f} {summary.quantile(0.99):8.2f}"
            f" {max(seconds):8.2f} {left:9d}"
        )


if __name__ == "__main__":
    main()
