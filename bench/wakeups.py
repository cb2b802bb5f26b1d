"""Push wakeups against polling, in one run on one server.

1. Wakeup latency: an idle ActivityWorker (every slot waiting), an activity
   scheduled at a random moment; the time until its handler starts. One
   worker waits on push wakeups, the other polls as before (20 ms doubling to
   500 ms); samples alternate between them.
2. What the notifications cost enqueue and ack (bench/notification_cost.py).
3. The whole loop: a worker running activities while a producer queues them,
   with push wakeups, and polling on a schema without wakeups.

    python -m bench.wakeups [--quick] [--url URL]
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
from typing import Any

import psycopg

from bench import notification_cost
from bench.sides import database_url
from devkit.workloads.flavours import TASKHUB, TASKHUB_WITHOUT_WAKEUPS, Flavour
from provider import ActivityContext, ActivityWorker, TaskHub

P50_TARGET_MS, P99_TARGET_MS = 5.0, 20.0
POLLING = "polling, no wakeups in the schema"


def _activity(n: int, name: str = "Go") -> dict[str, Any]:
    return {
        "ActivityExecute": {
            "instance": f"i-{n}",
            "execution_id": 1,
            "id": n,
            "name": name,
            "input": "null",
        }
    }


class TimedWorker:
    """A worker whose handler records when each activity started (also the
    pooler drill's, drills/pooler_drill/latency.py)."""

    def __init__(self, hub: TaskHub, push: bool) -> None:
        self.started: dict[int, float] = {}
        self.changed = threading.Condition()
        self.worker = ActivityWorker(hub, concurrency=2, push_wakeups=push)
        self.worker.register("Go", self._go)

    def _go(self, ctx: ActivityContext, _: Any) -> None:
        with self.changed:
            self.started[ctx.activity_id] = time.monotonic()
            self.changed.notify_all()

    def start_of(self, activity_id: int, timeout_s: float = 5.0) -> float:
        with self.changed:
            self.changed.wait_for(lambda: activity_id in self.started, timeout_s)
            return self.started[activity_id]


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def wakeup_latency(url: str, samples: int) -> dict[str, dict[str, float]]:
    latencies: dict[str, list[float]] = {"push": [], "polling": []}
    schemas = {mode: TASKHUB.create_schema(url, f"bench_wake_{mode}") for mode in latencies}
    hubs = {mode: TaskHub.connect(url, schemas[mode]) for mode in latencies}
    timed = {mode: TimedWorker(hubs[mode], push=mode == "push") for mode in latencies}
    rng = random.Random(7)
    try:
        for t in timed.values():
            t.worker.start()
        time.sleep(1.0)
        for n in range(samples):
            for mode in ("push", "polling") if n % 2 == 0 else ("polling", "push"):
                time.sleep(rng.uniform(0.2, 0.8))  # idle: the poll has backed off
                sent = time.monotonic()
                hubs[mode].enqueue_worker_work(_activity(n))
                latencies[mode].append((timed[mode].start_of(n) - sent) * 1000)
    finally:
        for mode in latencies:
            timed[mode].worker.stop()
            hubs[mode].close()
            _drop(url, schemas[mode])
    return {
        mode: {
            "p50_ms": statistics.median(values),
            "p99_ms": _percentile(values, 0.99),
            "max_ms": max(values),
            "samples": len(values),
        }
        for mode, values in latencies.items()
    }


def _worker_activities_per_s(url: str, schema: str, push: bool, activities: int) -> float:
    """A producer queues activities as fast as it can while a worker (4 slots)
    runs them: activities per second from the first enqueue to the last ack."""
    with TaskHub.connect(url, schema) as hub:
        worker = ActivityWorker(hub, concurrency=4, push_wakeups=push)
        worker.register("Cycle", lambda ctx, _: None)
        with worker:
            time.sleep(0.5)  # idle, listening
            started = time.perf_counter()
            for n in range(activities):
                hub.enqueue_worker_work(_activity(n, "Cycle"))
            while worker.stats.completed < activities:
                time.sleep(0.002)
            return activities / (time.perf_counter() - started)


def worker_throughput(url: str, rounds: int, activities: int) -> dict[str, float]:
    """Median activities/s of a worker with push wakeups (our schema) and of the
    same worker polling on a schema without wakeups; rounds alternate."""
    settings: list[tuple[str, Flavour, bool]] = [
        ("push wakeups", TASKHUB, True),
        (POLLING, TASKHUB_WITHOUT_WAKEUPS, False),
    ]
    runs: dict[str, list[float]] = {name: [] for name, _, _ in settings}
    for round_number in range(rounds):
        order = settings if round_number % 2 == 0 else settings[::-1]
        for name, flavour, push in order:
            schema = flavour.create_schema(url, f"bench_flow_{flavour.prefix}_{round_number}")
            try:
                runs[name].append(_worker_activities_per_s(url, schema, push, activities))
            finally:
                _drop(url, schema)
    return {name: statistics.median(values) for name, values in runs.items()}


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run(url: str, quick: bool = False) -> dict[str, Any]:
    latency = wakeup_latency(url, samples=10 if quick else 40)
    cost = notification_cost.measure(url, rounds=1 if quick else 9, calls=200 if quick else 1_000)
    flow = worker_throughput(url, rounds=1 if quick else 5, activities=300 if quick else 1_500)
    return {"latency": latency, "notification_cost": cost, "worker_throughput": flow}


def report(figures: dict[str, Any]) -> list[str]:
    """The section `make bench` prints, with the targets."""
    push, polling = figures["latency"]["push"], figures["latency"]["polling"]
    lines = [
        "wakeup latency, idle worker: queued -> handler started (ms)",
        f"  {'':<28} {'p50':>8} {'p99':>8} {'max':>8}",
    ]
    for mode, row in (("push wakeups", push), ("polling (20-500 ms)", polling)):
        lines.append(
            f"  {mode:<28} {row['p50_ms']:>8.1f} {row['p99_ms']:>8.1f} {row['max_ms']:>8.1f}"
        )
    lines.append(
        f"  target p50 <= {P50_TARGET_MS:.0f} ms, p99 <= {P99_TARGET_MS:.0f} ms: "
        + (
            "MET"
            if push["p50_ms"] <= P50_TARGET_MS and push["p99_ms"] <= P99_TARGET_MS
            else "NOT MET"
        )
    )
    lines += notification_cost.report(figures["notification_cost"])
    flow = figures["worker_throughput"]
    polling_flow = flow[POLLING]
    lines.append("a worker (4 slots) running activities as a producer queues them: activities/s")
    for name, value in flow.items():
        lines.append(f"  {name:<36} {value:>8.0f}  {100 * (value / polling_flow - 1):+6.1f} %")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--url")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    try:
        figures = run(url, args.quick)
    finally:
        if cluster is not None:
            cluster.stop()
    print("\n".join(report(figures)))


if __name__ == "__main__":
    main()
