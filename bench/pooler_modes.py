"""What each pooler setting costs a call: the round trip of one provider call
with the direct settings, with the transaction pooler's settings (no
prepared statements, the statement timeout SET LOCAL in a pipelined
transaction around each call) straight to the server, and through Debian's
PgBouncer in session and in transaction mode; side by side in one run,
the order of the sides alternated each round, medians reported.

    python -m bench.pooler_modes [--rounds 9] [--calls 400]      (make bench-poolers)

The server's own time for the call's statements is the same on every side
(the same procedure runs): what differs is what goes around it, so the
figure is the client's round trip, with the direct side as the anchor.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from devkit.pgbouncer import available, pgbouncer
from provider import TaskHub
from provider.deploy import migrate
from provider.testing.embedded_pg import EmbeddedPostgres

SCHEMA = "pooler_bench"
ANCHOR = "direct"


def _call(hub: TaskHub) -> None:
    """A light read the runtime makes often: the queue depths."""
    hub.get_queue_depths()


def round_trip_ms(hub: TaskHub, calls: int, call: Callable[[TaskHub], None] = _call) -> float:
    """The median round trip of `calls` calls, after a warm-up (psycopg
    prepares a statement on its sixth run where it may)."""
    for _ in range(10):
        call(hub)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call(hub)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


@contextmanager
def sides(server_url: str) -> Iterator[dict[str, TaskHub]]:
    """One hub per side, each with a pool of one connection."""
    with ExitStack() as stack:
        session = stack.enter_context(pgbouncer(server_url, "session"))
        transaction = stack.enter_context(pgbouncer(server_url, "transaction"))
        settings: dict[str, dict[str, Any]] = {
            ANCHOR: {"url": server_url, "pooler": "direct"},
            "transaction settings, direct": {"url": server_url, "pooler": "transaction"},
            "PgBouncer session": {"url": session.url(server_url), "pooler": "session"},
            "PgBouncer transaction": {"url": transaction.url(server_url), "pooler": "transaction"},
        }
        hubs = {}
        for name, given in settings.items():
            hub = TaskHub.connect(given["url"], SCHEMA, pooler=given["pooler"], pool_max_size=1)
            hubs[name] = stack.enter_context(hub)
        yield hubs


def run(rounds: int, calls: int) -> dict[str, list[float]]:
    cluster = EmbeddedPostgres.create()
    try:
        url = cluster.start()
        migrate.upgrade(url, SCHEMA)
        with sides(url) as hubs:
            figures: dict[str, list[float]] = {name: [] for name in hubs}
            names = list(hubs)
            for number in range(rounds):
                # Alternate the order: no side always runs first on a warm cache.
                order = names if number % 2 == 0 else list(reversed(names))
                for name in order:
                    figures[name].append(round_trip_ms(hubs[name], calls))
            return figures
    finally:
        cluster.stop()


def report(figures: dict[str, list[float]]) -> None:
    anchor = statistics.median(figures[ANCHOR])
    print(f"{'side':<30} {'median round trip':>18} {'vs direct':>10}")
    for name, rounds in figures.items():
        median = statistics.median(rounds)
        print(f"{name:<30} {median:>15.3f} ms {median / anchor:>9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pooler_modes")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=400)
    args = parser.parse_args()
    if not available():
        raise SystemExit("bench.pooler_modes: needs Debian's pgbouncer (apt-get install pgbouncer)")
    figures = run(args.rounds, args.calls)
    print(f"{args.rounds} rounds of {args.calls} calls per side (get_queue_depths, one connection)")
    report(figures)


if __name__ == "__main__":
    main()
