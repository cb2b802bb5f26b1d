"""What a rate limit costs the fetch (issue 57): `--items` Charge items are
queued, and `--fetchers` connections fetch and ack them as a dispatcher
would (each fetch that hands out nothing is followed by a poll interval,
`--poll-ms`), until every item is done. Two sides, in alternating order:
no rule, and a rate limit of `--rate` a second on Charge. Printed for each:
the wall time, the median and p99 server time of a fetch (read by the
server's clock around the call, in the same statement), and how many
fetches returned nothing.

    python -m bench.rate_fetch [--items 400] [--rate 20] [--fetchers 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import psycopg

from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from devkit.workloads.measure import Latencies
from devkit.workloads.work_items import activity_completed, activity_execute
from provider import TaskHub

# The server's clock before the call (the outer side of the nested loop is
# read first) and after it: the fetch's own time, without the round trip.
TIMED_FETCH = """
SELECT extract(epoch FROM clock_timestamp() - t.started) * 1e6 AS server_us,
       f.out_lock_token, f.out_work_item
  FROM (SELECT clock_timestamp() AS started) AS t
  LEFT JOIN LATERAL {schema}.fetch_work_item(
       (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 30000) AS f ON true
"""


class Side:
    """One run's fetch times, empty fetches, and items left."""

    def __init__(self, items: int) -> None:
        self.lock = threading.Lock()
        self.left = items
        self.fetch_us: list[float] = []
        self.empty = 0


def fetcher(url: str, schema: str, side: Side, poll_s: float) -> None:
    statement = TIMED_FETCH.format(schema=f'"{schema}"')
    with psycopg.connect(url, autocommit=True) as conn:
        # A session's first call plans the function's statements: not a
        # fetch's cost, so not counted.
        # (A fetch for a tag no item has plans them and takes nothing.)
        conn.execute(
            f'SELECT * FROM "{schema}".fetch_work_item('
            "(extract(epoch FROM clock_timestamp()) * 1000)::bigint, 30000,"
            " NULL, NULL, ARRAY['warm-up'], 'tags')"
        )
        while True:
            with side.lock:
                if side.left <= 0:
                    return
            row = conn.execute(statement).fetchone()
            assert row is not None
            server_us, token, item = row
            with side.lock:
                side.fetch_us.append(float(server_us))
                if token is None:
                    side.empty += 1
            if token is None:
                time.sleep(poll_s)
                continue
            body = json.loads(item)["ActivityExecute"]
            conn.execute(
                f'SELECT "{schema}".ack_worker(%s, %s, %s,'
                " (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
                [
                    token,
                    body["instance"],
                    json.dumps(activity_completed(body["instance"], body["id"])),
                ],
            )
            with side.lock:
                side.left -= 1


def run_side(url: str, args: argparse.Namespace, rate: float | None) -> tuple[float, Side]:
    schema = fresh_schema(url, TASKHUB)
    try:
        hub = TaskHub.connect(url, schema)
        try:
            for number in range(args.items):
                hub.enqueue_worker_work(activity_execute("checkout", number + 1, name="Charge"))
        finally:
            hub.close()
        if rate is not None:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    f"SELECT \"{schema}\".taskhub_set_flow_rate('activity', 'Charge', %s)", [rate]
                )
        side = Side(args.items)
        threads = [
            threading.Thread(target=fetcher, args=(url, schema, side, args.poll_ms / 1000))
            for _ in range(args.fetchers)
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.monotonic() - started, side
    finally:
        drop_schema(url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.rate_fetch")
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--fetchers", type=int, default=4)
    parser.add_argument("--poll-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else a private cluster)")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    sides: dict[str, float | None] = {"no rule": None, f"rate {args.rate:g}/s": args.rate}
    results: dict[str, list[tuple[float, Side]]] = {name: [] for name in sides}
    try:
        for round_number in range(args.rounds):
            names = list(sides) if round_number % 2 == 0 else list(sides)[::-1]
            for name in names:
                results[name].append(run_side(url, args, sides[name]))
    finally:
        if cluster is not None:
            cluster.stop()
    print(
        f"{args.items} Charge items, {args.fetchers} fetchers polling every {args.poll_ms:g} ms,"
        f" medians of {args.rounds} rounds"
    )
    print(f"{'':14} {'wall s':>7} {'fetch p50 us':>13} {'fetch p99 us':>13} {'empty fetches':>14}")
    p99s = {}
    for name, runs in results.items():
        wall = sorted(run[0] for run in runs)[len(runs) // 2]
        p50 = sorted(Latencies(run[1].fetch_us).median for run in runs)[len(runs) // 2]
        p99 = sorted(Latencies(run[1].fetch_us).quantile(0.99) for run in runs)[len(runs) // 2]
        empty = sorted(run[1].empty for run in runs)[len(runs) // 2]
        p99s[name] = p99
        print(f"{name:14} {wall:7.2f} {p50:13.1f} {p99:13.1f} {empty:14}")
    rated, plain = p99s[f"rate {args.rate:g}/s"], p99s["no rule"]
    print(f"fetch p99, rated against no rule: {rated / plain:.2f}x")


if __name__ == "__main__":
    main()
