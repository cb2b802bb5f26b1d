"""`make bench`: every scenario on our schema and on a schema created by the
released duroxide 0.2.2 runtime, on the same server, in the same run.

    python -m bench.run [--quick] [--repeats N] [--url DATABASE_URL]

Each comparison runs `repeats` times, alternating which schema goes first,
and reports medians (the machine is shared and noisy). Results: a table on
stdout, bench/results/latest.json and bench/results/latest.png.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from bench import ceiling, citus, end_to_end, growth, uniform, wakeups, worker_queue
from bench.report import Comparison, Metrics, print_table, save_json, save_plot
from bench.sides import compare, database_url, drop_schema, fresh_schema
from devkit.workloads.contention import ContentionSettings, run_contention, seed_hot_instances
from devkit.workloads.flavours import TASKHUB

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Plan:
    repeats: int
    contention: ContentionSettings
    uniform: uniform.UniformSettings
    worker: worker_queue.WorkerSettings
    end_to_end: end_to_end.EndToEndSettings
    depths: tuple[int, ...]
    histories: tuple[int, ...]
    ceiling_items: int


DEFAULT = Plan(
    repeats=3,
    contention=ContentionSettings(duration_s=8.0),
    uniform=uniform.UniformSettings(duration_s=8.0),
    worker=worker_queue.WorkerSettings(items=3_000),
    end_to_end=end_to_end.EndToEndSettings(orchestrations=100),
    depths=(1_000, 10_000, 100_000, 1_000_000),
    histories=(10, 1_000, 10_000),
    ceiling_items=20_000,
)
QUICK = Plan(
    repeats=1,
    contention=ContentionSettings(duration_s=3.0),
    uniform=uniform.UniformSettings(duration_s=3.0),
    worker=worker_queue.WorkerSettings(items=1_000),
    end_to_end=end_to_end.EndToEndSettings(orchestrations=30),
    depths=(1_000, 10_000, 100_000),
    histories=(10, 1_000, 10_000),
    ceiling_items=5_000,
)


def contended(plan: Plan) -> Callable[[str, str], Metrics]:
    def scenario(url: str, schema: str) -> Metrics:
        with psycopg.connect(url, autocommit=True) as conn:
            seed_hot_instances(conn, schema, plan.contention)
        result = run_contention(url, schema, plan.contention)
        return {
            "turns_per_s": result.turns_per_second,
            "fetch_p50_ms": result.latency_ms(0.5),
            "fetch_p99_ms": result.latency_ms(0.99),
            "fetch_max_ms": result.fetch_latency.maximum,
            "expired_leases": float(result.expired_leases),
            "ack_failures": float(result.ack_failures),
            "errors": float(result.errors),
        }

    return scenario


def run_all(url: str, plan: Plan) -> tuple[list[Comparison], dict[str, Any]]:
    comparisons: list[Comparison] = []

    schema = f"bench_ceiling_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    ceiling_figures = ceiling.run(url, schema, plan.ceiling_items)
    drop_schema(url, schema)
    print(f"ceiling: {ceiling_figures['claims_per_s']:.0f} claims/s", flush=True)

    lock_ms = plan.contention.lock_timeout_ms
    figures = compare(url, plan.repeats, contended(plan))
    ours = figures[TASKHUB.name]
    comparisons.append(
        Comparison(
            "contended fetch (16 dispatchers, 4 hot instances x 2k events, 1 s lock)",
            "turns_per_s",
            figures,
            target_ratio=2.0,
            checks={
                "zero expired leases": ours["expired_leases"] == 0,
                "zero ack failures": ours["ack_failures"] == 0,
                "zero errors": ours["errors"] == 0,
                f"p99 fetch < {lock_ms // 10} ms": ours["fetch_p99_ms"] < lock_ms / 10,
            },
        )
    )
    print("contended done", flush=True)

    figures = compare(url, plan.repeats, lambda u, s: uniform.run(u, s, plan.uniform))
    comparisons.append(
        Comparison(
            "uniform (200 light instances, 8 dispatchers)", "turns_per_s", figures, target_ratio=1.0
        )
    )
    print("uniform done", flush=True)

    for variant in ("plain", "sessions", "tags"):
        settings = replace(plan.worker, variant=variant)

        def worker_scenario(u: str, s: str, w: worker_queue.WorkerSettings = settings) -> Metrics:
            return worker_queue.run(u, s, w)

        figures = compare(url, plan.repeats, worker_scenario)
        comparisons.append(
            Comparison(
                f"worker queue, {variant} (8 workers)",
                "activities_per_s",
                figures,
                target_ratio=1.0,
            )
        )
        print(f"worker {variant} done", flush=True)

    figures = compare(url, plan.repeats, lambda u, s: end_to_end.run(u, s, plan.end_to_end))
    comparisons.append(
        Comparison(
            f"end to end, duroxide runtime ({plan.end_to_end.orchestrations} fan-outs x "
            f"{plan.end_to_end.fan_out})",
            "orchestrations_per_s",
            figures,
            target_ratio=1.0,
        )
    )
    print("end to end done", flush=True)

    growth_figures: dict[str, Any] = {"queue_depth": {}, "history_events": {}}
    for depth in plan.depths:
        schema = fresh_schema(url, TASKHUB)
        growth_figures["queue_depth"][depth] = growth.queue_depth(url, schema, depth)
        drop_schema(url, schema)
    for events in plan.histories:
        schema = fresh_schema(url, TASKHUB)
        growth_figures["history_events"][events] = growth.history_size(url, schema, events)
        drop_schema(url, schema)
    depth_p50 = [figure["fetch_p50_ms"] for figure in growth_figures["queue_depth"].values()]
    comparisons.append(
        Comparison(
            f"growth: fetch p50 at queue depth {plan.depths[0]:,} .. {plan.depths[-1]:,}",
            "fetch_p50_ms",
            {TASKHUB.name: {"fetch_p50_ms": depth_p50[-1], "fetch_p50_ms_smallest": depth_p50[0]}},
            checks={
                "flat in queue depth (largest <= 2x smallest + 1 ms)": depth_p50[-1]
                <= 2 * depth_p50[0] + 1.0
            },
        )
    )
    print("growth done", flush=True)
    wakeup_figures = wakeups.run(url, quick=plan.repeats == 1)
    print("wakeups done", flush=True)
    extras = {"ceiling": ceiling_figures, "growth": growth_figures, "wakeups": wakeup_figures}
    return comparisons, extras


def citus_section(plain_url: str, quick: bool) -> dict[str, Any]:
    """A distributed hub against the same hub on this run's plain server
    (bench/citus.py), when CITUS_DATABASE_URL names a coordinator."""
    coordinator = os.environ.get("CITUS_DATABASE_URL")
    if not coordinator:
        return {"lines": ["Citus: skipped (CITUS_DATABASE_URL is not set: docs/scale-out.md)"]}
    print("Citus: a distributed hub against the same hub on plain PostgreSQL", flush=True)
    document = citus.run_all(citus.QUICK if quick else citus.Plan(), plain_url, coordinator)
    document["lines"] = [line for w in document["workloads"].values() for line in w["report"]]
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a one-minute smoke run")
    parser.add_argument("--repeats", type=int, help="repeats per comparison (medians)")
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else embedded)")
    args = parser.parse_args()
    plan = QUICK if args.quick else DEFAULT
    if args.repeats:
        plan = replace(plan, repeats=args.repeats)

    url, cluster = database_url(args.url)
    started = time.perf_counter()
    try:
        comparisons, extras = run_all(url, plan)
        extras["citus"] = citus_section(url, args.quick)
    finally:
        if cluster is not None:
            cluster.stop()
    elapsed = time.perf_counter() - started

    print_table(comparisons, extras["ceiling"]["claims_per_s"])
    print()
    print("\n".join(wakeups.report(extras["wakeups"])))
    print()
    print("\n".join(extras["citus"]["lines"]))
    RESULTS.mkdir(exist_ok=True)
    document = {
        "plan": asdict(plan),
        "elapsed_s": elapsed,
        "comparisons": [{**asdict(c), "ratio": c.ratio(), "met": c.met()} for c in comparisons],
        **extras,
    }
    save_json(RESULTS / "latest.json", document)
    save_plot(RESULTS / "latest.png", comparisons, extras)
    print(
        f"\n{len(comparisons)} comparisons in {elapsed:.0f} s; "
        f"results in {RESULTS / 'latest.json'} and latest.png"
    )
    print(json.dumps({c.scenario: c.met() for c in comparisons}, indent=1))


if __name__ == "__main__":
    main()
