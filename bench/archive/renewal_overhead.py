"""What lease renewal costs: the latency of one renewal call, and the
throughput of the activity worker when every activity is renewed twice
against the same workload renewed never.

    python -m bench.archive.renewal_overhead [DATABASE_URL]
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from typing import Any

from provider import ActivityContext, ActivityWorker, TagFilter, TaskHub
from provider.deploy import migrate
from provider.testing.embedded_pg import EmbeddedPostgres

ACTIVITIES = 120
ACTIVITY_S = 0.2
CONCURRENCY = 8


def renew_latency_ms(hub: TaskHub, calls: int = 500) -> tuple[float, float]:
    hub.enqueue_worker_work(
        {
            "ActivityExecute": {
                "instance": "renew-bench",
                "execution_id": 1,
                "id": 1,
                "name": "X",
                "input": "{}",
            }
        }
    )
    lease = hub.fetch_work_item(60_000)
    assert lease is not None
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        hub.renew_work_item_lock(lease.lock_token, 60_000)
        samples.append((time.perf_counter() - started) * 1000)
    hub.ack_work_item(lease.lock_token, None)
    samples.sort()
    return statistics.median(samples), samples[int(0.99 * len(samples))]


def worker_run_s(hub: TaskHub, lock_timeout_ms: int) -> tuple[float, int]:
    for n in range(ACTIVITIES):
        hub.enqueue_worker_work(
            {
                "ActivityExecute": {
                    "instance": f"w-{n}",
                    "execution_id": 1,
                    "id": n,
                    "name": "Work",
                    "input": "0",
                }
            }
        )
    worker = ActivityWorker(
        hub,
        concurrency=CONCURRENCY,
        tags=TagFilter.any(),
        lock_timeout_ms=lock_timeout_ms,
        idle_poll_ms=5,
    )

    def work(ctx: ActivityContext, _: Any) -> None:
        ctx.token.wait(ACTIVITY_S)

    worker.register("Work", work)
    started = time.perf_counter()
    with worker:
        while worker.stats.completed < ACTIVITIES:
            time.sleep(0.005)
    return time.perf_counter() - started, worker.stats.renewals


def main(url: str) -> None:
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    migrate.upgrade(url, schema)
    with TaskHub.connect(url, schema, pool_max_size=CONCURRENCY + 4) as hub:
        p50, p99 = renew_latency_ms(hub)
        print(f"renewal call: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        runs: dict[str, list[float]] = {"never renewed": [], "renewed twice each": []}
        renewals = 0
        for _ in range(3):
            elapsed, _unused = worker_run_s(hub, 60_000)
            runs["never renewed"].append(elapsed)
            elapsed, renewals = worker_run_s(hub, int(ACTIVITY_S * 1000 * 3 / 2.5))
            runs["renewed twice each"].append(elapsed)
        base = statistics.median(runs["never renewed"])
        renewed = statistics.median(runs["renewed twice each"])
        print(f"{ACTIVITIES} activities x {ACTIVITY_S} s, {CONCURRENCY} slots (median of 3):")
        print(f"  never renewed      {ACTIVITIES / base:7.1f} activities/s")
        print(
            f"  renewed ~twice     {ACTIVITIES / renewed:7.1f} activities/s"
            f"  ({renewals} renewals in the last run)"
        )
        print(f"  overhead           {100 * (renewed - base) / base:+7.1f} %")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        cluster = EmbeddedPostgres.create()
        try:
            main(cluster.start())
        finally:
            cluster.stop()
