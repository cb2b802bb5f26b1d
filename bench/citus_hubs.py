"""Many hubs on one Citus cluster (issue 27): create and migrate N hubs
(`--citus schema`), see where Citus put them, rebalance while runtimes run on
some of them, and run `taskhub-pg check` over all of them.

    python -m bench.citus_hubs --citus COORDINATOR_URL [--hubs 100] [--served 4]

1. The hubs are made while one worker takes no new shards, so that all of
   them start on the other: the rebalance then has work to do.
2. The worker is let back in, a duroxide runtime (a process each, through
   the coordinator) is started on `--served` of the hubs the rebalance plans
   to move first, with orchestrations running, and
   `citus_rebalance_start` (by shard count, `block_writes`) spreads the hubs;
   the runtimes' orchestrations must all complete. (Citus's default strategy
   balances disk size instead: with a few hubs holding data, 58/42 here.)
3. `taskhub-pg check --json` on every hub: each must report no drift.
Every hub is dropped at the end (`--keep` leaves them). Results on stdout
and in bench/results/citus_hubs.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import psycopg

from bench.end_to_end import EndToEndSettings
from bench.end_to_end import run as run_end_to_end
from provider.citus_placement import PLACEMENT_QUERY, Node
from provider.cli.app import main as taskhub_pg
from provider.deploy import migrate
from provider.operations import citus

RESULTS = Path(__file__).resolve().parent / "results"


@contextlib.contextmanager
def taking_no_shards(conn: psycopg.Connection[Any], node: Node) -> Iterator[None]:
    setting = "SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', %s)"
    conn.execute(setting, [node.host, node.port, False])
    try:
        yield
    finally:
        conn.execute(setting, [node.host, node.port, True])


def spread(conn: psycopg.Connection[Any], hubs: list[str]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for schema in hubs:
        rows = conn.execute(PLACEMENT_QUERY, {"schema": schema}).fetchall()
        counts[",".join(f"{host}:{port}" for host, port in rows) or "nowhere"] += 1
    return dict(sorted(counts.items()))


def create_hubs(url: str, hubs: list[str]) -> list[float]:
    seconds = []
    for number, schema in enumerate(hubs, start=1):
        started = time.perf_counter()
        migrate.upgrade(url, schema, citus="schema")
        seconds.append(time.perf_counter() - started)
        if number % 10 == 0:
            print(f"  {number} hubs migrated, {seconds[-1]:.1f} s for the last", flush=True)
    return seconds


def serve_while(
    url: str, hubs: list[str], settings: EndToEndSettings
) -> tuple[ProcessPoolExecutor, dict[str, Future[dict[str, float]]]]:
    """A duroxide runtime per hub running `settings`, each in a process of its
    own (the runtime's binding wants its own process, as a deployment has)."""
    pool = ProcessPoolExecutor(max_workers=max(len(hubs), 1), mp_context=get_context("spawn"))
    return pool, {schema: pool.submit(run_end_to_end, url, schema, settings) for schema in hubs}


def results_of(futures: dict[str, Future[dict[str, float]]]) -> dict[str, Any]:
    done: dict[str, Any] = {}
    for schema, future in futures.items():
        try:
            done[schema] = future.result(timeout=600)
        except Exception as error:  # a failure is a result here, not a crash
            done[schema] = {"error": repr(error)}
    return done


def check_all(url: str, hubs: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    drifted = {}
    for schema in hubs:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = taskhub_pg(["check", "--url", url, "--schema", schema, "--json"])
        if code != 0:
            drifted[schema] = json.loads(out.getvalue() or "{}").get("problems", code)
    return {"hubs": len(hubs), "drifted": drifted, "seconds": time.perf_counter() - started}


def run(url: str, count: int, served: int, keep: bool) -> dict[str, Any]:
    hubs = [f"many_{number:03d}" for number in range(count)]
    document: dict[str, Any] = {"hubs": count}
    with psycopg.connect(url, autocommit=True) as conn:
        nodes = citus.workers(conn)
        if len(nodes) < 2:
            raise SystemExit("the rebalance needs a coordinator with at least two workers")
        print(f"1. creating and migrating {count} hubs (--citus schema), all on {nodes[0]}")
        with taking_no_shards(conn, nodes[1]):
            seconds = create_hubs(url, hubs)
        document["migrate_s"] = {
            "total": sum(seconds),
            "median": statistics.median(seconds),
            "p90": sorted(seconds)[int(0.9 * (len(seconds) - 1))],
            "max": max(seconds),
        }
        document["spread_before"] = spread(conn, hubs)
        print(f"   placement: {document['spread_before']}")

        # Runtimes on hubs the rebalance moves first: planned moves, in order.
        planned = [
            str(row[0]).split(".")[0]
            for row in conn.execute(
                "SELECT table_name"
                "  FROM get_rebalance_table_shards_plan(rebalance_strategy => 'by_shard_count')"
            ).fetchall()
        ]
        moving = list(dict.fromkeys(name for name in planned if name in hubs))
        document["planned_moves"] = len(moving)
        chosen = moving[:served]
        print(f"2. rebalancing ({len(moving)} hubs to move) with runtimes on {chosen}")
        settings = EndToEndSettings(orchestrations=200, fan_out=3, concurrency=2)
        pool, serving = serve_while(url, chosen, settings)
        time.sleep(2.0)  # the runtimes are under way
        started = time.perf_counter()
        conn.execute(
            "SELECT citus_rebalance_start(rebalance_strategy => 'by_shard_count',"
            " shard_transfer_mode => 'block_writes')"
        )
        conn.execute("SELECT citus_rebalance_wait()")
        document["rebalance_s"] = time.perf_counter() - started
        document["served"] = results_of(serving)
        pool.shutdown()
        document["spread_after"] = spread(conn, hubs)
        print(f"   rebalance took {document['rebalance_s']:.1f} s: {document['spread_after']}")
        print(f"   runtimes: {document['served']}")

    print("3. taskhub-pg check on every hub")
    document["check"] = check_all(url, hubs)
    print(f"   {document['check']}")
    if not keep:
        for schema in hubs:
            migrate.downgrade(url, schema, "base")
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--citus", default=os.environ.get("CITUS_DATABASE_URL"))
    parser.add_argument("--hubs", type=int, default=100)
    parser.add_argument("--served", type=int, default=4, help="hubs with a runtime running")
    parser.add_argument("--keep", action="store_true", help="leave the hubs in place")
    args = parser.parse_args()
    if not args.citus:
        raise SystemExit("no Citus coordinator: pass --citus URL or set CITUS_DATABASE_URL")
    document = run(args.citus, args.hubs, args.served, args.keep)
    m = document["migrate_s"]
    failed = sum(int(r["failed"]) if "failed" in r else 1 for r in document["served"].values())
    print(
        f"\n{args.hubs} hubs: migrated in {m['total']:.0f} s ({m['median']:.2f} s median a hub,"
        f" p90 {m['p90']:.2f} s); rebalance {document['rebalance_s']:.1f} s,"
        f" {document['spread_before']} -> {document['spread_after']};"
        f" orchestrations failed during it: {failed};"
        f" check: {len(document['check']['drifted'])} of {args.hubs} drifted"
        f" ({document['check']['seconds']:.0f} s)"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "citus_hubs.json").write_text(json.dumps(document, indent=1, default=str))


if __name__ == "__main__":
    main()
