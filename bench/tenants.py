"""Fairness between tenants (issue 57): tenant a queues `--backlog` orders,
then tenants b, c and d start `--orders` each; the released duroxide runtime
runs them (one activity of `--run-s` each). Printed for each side: the p99
time from start to completion of b's orders, and the most activities seen
running at once per tenant (counted by the handlers):

* "alone": b's orders on an empty hub, under a per-tenant limit;
* "behind a, per-tenant limit": a's backlog first, the limit
  (`taskhub_set_flow_limit('label_each', 'tenant', N)`);
* "behind a, no rule (anchor)": a's backlog first, no limit.

    python -m bench.tenants [--backlog 5000] [--orders 50] [--limit 2] [--run-s 0.02]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import Counter
from typing import Any

import duroxide

from bench.priorities import completed_at
from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from devkit.workloads.measure import Latencies
from provider import Client, StartRequest

TENANTS = ("b", "c", "d")


class PerTenant:
    """Activities running now and at most, per tenant."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()

    def run(self, tenant: str, run_s: float) -> None:
        with self.lock:
            self.now[tenant] += 1
            self.peak[tenant] = max(self.peak[tenant], self.now[tenant])
        time.sleep(run_s)
        with self.lock:
            self.now[tenant] -= 1


def _runtime(url: str, schema: str, running: PerTenant, run_s: float) -> Any:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(
        provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, worker_concurrency=8)
    )

    @runtime.register_activity("Pack")
    def pack(ctx: Any, tenant: str) -> str:
        running.run(tenant, run_s)
        return tenant

    @runtime.register_orchestration("Order")
    def order(ctx: Any, tenant: str) -> Any:
        packed = yield ctx.schedule_activity("Pack", tenant)
        return packed

    return runtime


def run_side(url: str, args: argparse.Namespace, backlog: int, limit: bool) -> tuple[float, str]:
    """p99 seconds of b's orders, and the peaks per tenant."""
    schema = fresh_schema(url, TASKHUB)
    running = PerTenant()
    runtime = None
    try:
        with Client.connect(url, schema, statement_timeout_ms=600_000) as client:
            if limit:
                client.set_label_limit("tenant", args.limit, each_value=True)
            for first in range(0, backlog, 5_000):
                numbers = range(first, min(first + 5_000, backlog))
                client.start_many(
                    [StartRequest(f"a-{n}", "Order", "a", labels={"tenant": "a"}) for n in numbers]
                )
            runtime = _runtime(url, schema, running, args.run_s)
            runtime.start()
            started: dict[str, float] = {}
            for n in range(args.orders):
                for tenant in TENANTS:
                    instance = f"{tenant}-{n}"
                    started[instance] = time.time()
                    client.start(instance, "Order", tenant, labels={"tenant": tenant})
            b_orders = [instance for instance in started if instance.startswith("b-")]
            deadline = time.monotonic() + args.give_up_s
            done: dict[str, float] = {}
            while len(done) < len(b_orders) and time.monotonic() < deadline:
                time.sleep(0.05)
                done = completed_at(url, schema, b_orders)
        seconds = [done[i] - started[i] if i in done else args.give_up_s for i in b_orders]
        peaks = ", ".join(f"{tenant} {running.peak[tenant]}" for tenant in ("a", *TENANTS))
        return Latencies(seconds).quantile(0.99), peaks
    finally:
        if runtime is not None:
            runtime.shutdown(timeout_ms=2_000)
        drop_schema(url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tenants")
    parser.add_argument("--backlog", type=int, default=5_000)
    parser.add_argument("--orders", type=int, default=50)
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--run-s", type=float, default=0.02)
    parser.add_argument("--give-up-s", type=float, default=60.0)
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else a private cluster)")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    sides = {
        "alone, per-tenant limit": (0, True),
        "behind a, per-tenant limit": (args.backlog, True),
        "behind a, no rule (anchor)": (args.backlog, False),
    }
    try:
        results = {name: run_side(url, args, *side) for name, side in sides.items()}
    finally:
        if cluster is not None:
            cluster.stop()
    print(
        f"tenant b's {args.orders} orders, with c's and d's, behind tenant a's"
        f" {args.backlog:,} (limit {args.limit} per tenant where set), released runtime 0.2.2"
    )
    print(f"{'':30} {'b p99 s':>8}  most running at once per tenant")
    for name, (p99, peaks) in results.items():
        print(f"{name:30} {p99:8.2f}  {peaks}")


if __name__ == "__main__":
    main()
