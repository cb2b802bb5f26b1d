"""Starting many orchestrations: Client.start_many (one call) against the
same number of single Client.start calls, in one run.

    python -m bench.start_many [--starts 10000] [--rounds 3] [--url URL]

Each round starts `--starts` new instances both ways, each on a fresh schema
at head, in an order that alternates between rounds (the machine is shared:
a slow moment hits both sides of a round). Printed: the median wall time of
each way, starts per second, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from provider import Client, StartRequest

Way = Callable[[Client, list[StartRequest]], None]


def singles(client: Client, starts: list[StartRequest]) -> None:
    for start in starts:
        client.start(start.instance_id, start.orchestration, start.input)


def one_call(client: Client, starts: list[StartRequest]) -> None:
    results = client.start_many(starts)
    assert all(result.started for result in results)


WAYS: dict[str, Way] = {
    "start x N (anchor)": singles,
    "start_many(N)": one_call,
}


def timed(url: str, way: Way, starts: list[StartRequest]) -> float:
    schema = fresh_schema(url, TASKHUB)
    try:
        with Client.connect(url, schema, pool_max_size=1, statement_timeout_ms=600_000) as client:
            began = time.perf_counter()
            way(client, starts)
            return time.perf_counter() - began
    finally:
        drop_schema(url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.start_many")
    parser.add_argument("--starts", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else a private cluster)")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    try:
        starts = [StartRequest(f"order-{n}", "ProcessOrder", {"id": n}) for n in range(args.starts)]
        seconds: dict[str, list[float]] = {name: [] for name in WAYS}
        for round_ in range(args.rounds):
            order = list(WAYS) if round_ % 2 == 0 else list(reversed(WAYS))
            for name in order:
                seconds[name].append(timed(url, WAYS[name], starts))
        anchor = statistics.median(seconds["start x N (anchor)"])
        print(f"{args.starts} starts, median of {args.rounds} rounds (alternating order)")
        print(f"{'way':<22}{'seconds':>10}{'starts/s':>12}{'vs anchor':>12}")
        for name, values in seconds.items():
            median = statistics.median(values)
            print(
                f"{name:<22}{median:>10.2f}{args.starts / median:>12,.0f}{anchor / median:>11.1f}x"
            )
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
