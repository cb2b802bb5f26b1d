"""A fleet-wide limit over the released runtime and Python worker processes
(issue 57): one orchestration fans out `--charges` Charge activities of
`--run-s` each; the released duroxide runtime (4 activity slots) and
`--workers` Python worker processes (4 slots each) run them, under a limit
of `--limit` set on Charge in the hub. Printed: the most handlers seen
running at once (counted by the handlers themselves, across processes),
whether any ran twice or never, and the wall time against the ideal
charges x run_s / limit.

    python -m bench.fleet_limit [--charges 500] [--run-s 0.2] [--limit 5] [--workers 3]
        [--where both|runtime] [--rate R]

--where runtime runs every Charge in the runtime itself (no Python worker;
give it more slots than the limit with --runtime-slots 8).
--rate R sets a rate limit of R a second on Charge instead of the
concurrency limit: the wall time is then held against charges / R.
--pause-s S pauses Charge instead, for S seconds of load (Mail activities
run meanwhile): how many Charge ran while it was paused, then whether all
of them ran once after the resume.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import duroxide

from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from provider import ActivityContext, ActivityWorker, Client, TaskHub

SLOTS = 4


class Counters:
    """Handlers running now and at most, and how often each number ran,
    shared by every process."""

    def __init__(self, charges: int) -> None:
        self.lock = mp.Lock()
        self.now: Synchronized[int] = mp.Value("i", 0, lock=False)
        self.peak: Synchronized[int] = mp.Value("i", 0, lock=False)
        self.runs = mp.Array("i", charges, lock=False)
        self.mails: Synchronized[int] = mp.Value("i", 0, lock=False)

    def mail(self) -> None:
        with self.lock:
            self.mails.value += 1

    def run(self, number: int, run_s: float) -> int:
        with self.lock:
            self.now.value += 1
            self.peak.value = max(self.peak.value, self.now.value)
            self.runs[number] += 1
        time.sleep(run_s)  # the call to the payment provider
        with self.lock:
            self.now.value -= 1
        return number


def _python_worker(url: str, schema: str, counters: Counters, run_s: float, stop: Any) -> None:
    with TaskHub.connect(url, schema) as hub:
        worker = ActivityWorker(hub, concurrency=SLOTS, idle_poll_ms=5, max_idle_poll_ms=20)

        @worker.activity("Charge")
        def charge(ctx: ActivityContext, number: int) -> int:
            return counters.run(number, run_s)

        @worker.activity("Mail")
        def mail(ctx: ActivityContext, number: int) -> int:
            counters.mail()
            return number

        with worker:
            stop.wait()


def _runtime(url: str, schema: str, counters: Counters, run_s: float, slots: int) -> Any:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, worker_concurrency=slots),
    )

    @runtime.register_activity("Charge")
    def charge(ctx: Any, number: int) -> int:
        return counters.run(number, run_s)

    @runtime.register_activity("Mail")
    def mail(ctx: Any, number: int) -> int:
        counters.mail()
        return number

    @runtime.register_orchestration("Mailer")
    def mailer(ctx: Any, count: int) -> Any:
        for number in range(count):
            yield ctx.schedule_activity("Mail", number)
        return count

    @runtime.register_orchestration("Checkout")
    def checkout(ctx: Any, count: int) -> Any:
        results = yield ctx.all([ctx.schedule_activity("Charge", n) for n in range(count)])
        return len(results)

    return provider, runtime


def run(url: str, args: argparse.Namespace) -> None:
    schema = fresh_schema(url, TASKHUB)
    counters = Counters(args.charges)
    stop = mp.Event()
    workers = [
        mp.Process(target=_python_worker, args=(url, schema, counters, args.run_s, stop))
        for _ in range(args.workers if args.where == "both" else 0)
    ]
    provider, runtime = _runtime(url, schema, counters, args.run_s, args.runtime_slots)
    try:
        with Client.connect(url, schema) as client:
            if args.pause_s is not None:
                client.pause_activity("Charge", reason="bench.fleet_limit")
            elif args.rate is None:
                client.set_activity_limit("Charge", args.limit, reason="bench.fleet_limit")
            else:
                client.set_activity_rate("Charge", args.rate, burst=1, reason="bench.fleet_limit")
        for worker in workers:
            worker.start()
        runtime.start()
        began = time.perf_counter()
        dx_client = duroxide.Client(provider)
        dx_client.start_orchestration("checkout", "Checkout", args.charges)
        if args.pause_s is not None:
            for n in range(4):  # the load meanwhile: Mail after Mail
                dx_client.start_orchestration(f"mailer-{n}", "Mailer", 100_000)
            time.sleep(args.pause_s)
            ran_paused, mails = sum(counters.runs), counters.mails.value
            with Client.connect(url, schema) as client:
                client.resume_activity("Charge")
            began = time.perf_counter()
        result = dx_client.wait_for_orchestration("checkout", 600_000)
        wall_s = time.perf_counter() - began
    finally:
        runtime.shutdown(timeout_ms=2_000)
        stop.set()
        for worker in workers:
            worker.join(30)
        drop_schema(url, schema)
    if args.pause_s is not None:
        print(
            f"{args.charges} Charge paused for {args.pause_s:g} s of load: ran {ran_paused}"
            f" times while paused ({mails} Mail ran meanwhile); after the resume: {result.status},"
            f" ran twice / never {sum(1 for n in counters.runs if n > 1)} /"
            f" {list(counters.runs).count(0)}, in {wall_s:.2f} s"
        )
        return
    if args.rate is None:
        ideal_s = args.charges * args.run_s / args.limit
        rule = f"limit {args.limit}"
    else:
        ideal_s = args.charges / args.rate
        rule = f"rate {args.rate:g}/s"
    runs = list(counters.runs)
    print(
        f"{args.charges} Charge of {args.run_s} s, {rule}, runtime"
        f" ({args.runtime_slots} slots) + {len(workers)} Python worker processes"
        f" ({SLOTS} slots each)"
    )
    print(f"  outcome                 {result.status}")
    print(f"  most running at once    {counters.peak.value}")
    print(f"  ran twice / never       {sum(1 for n in runs if n > 1)} / {runs.count(0)}")
    print(
        f"  wall                    {wall_s:.2f} s, ideal {ideal_s:.2f} s ({wall_s / ideal_s:.2f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_limit")
    parser.add_argument("--charges", type=int, default=500)
    parser.add_argument("--run-s", type=float, default=0.2)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--where", choices=("both", "runtime"), default="both")
    parser.add_argument("--runtime-slots", type=int, default=4, help="the runtime's activity slots")
    parser.add_argument("--rate", type=float, help="a rate limit (a second) instead of --limit")
    parser.add_argument("--pause-s", type=float, help="pause Charge for this long under load")
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else a private cluster)")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    try:
        run(url, args)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
