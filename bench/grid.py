"""`make bench-grid`: the hot path over a grid of loads, on our schema and on a
schema created by the released duroxide 0.2.2 runtime, on one server, in one
run, alternating which goes first; medians of `repeats` runs.

    python -m bench.grid [--quick] [--repeats N] [--duration S] [--url URL]

* light: dispatchers {4, 16, 32} x instances {200, 2,000, 20,000};
* hot: {2, 8} hot instances x {500, 2,000} events x {100 B, 2 KB} payloads,
  beside 50 light instances, 16 dispatchers;
* each of them with a 1 s and a 5 s lock;
* then the worker queue (plain, sessions, tags), the duroxide runtime end to
  end, one fetch of a hot instance alone (against a plain string_agg read of
  the same rows, the floor), and the server time per call.

Results: a table on stdout, bench/results/grid.json and a heat map of the
throughput ratio, bench/results/grid.png.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from bench import end_to_end, worker_queue
from bench.grid_report import print_grid, save_heat_map, save_json
from bench.grid_workload import Cell, run_cell
from bench.per_call import hot_fetch_alone, server_time_per_call
from bench.run import compare, database_url, drop_schema, fresh_schema
from scripts.workloads.flavours import DUROXIDE_0_2_2, TASKHUB, Flavour

RESULTS = Path(__file__).resolve().parent / "results"
FLAVOURS = (TASKHUB, DUROXIDE_0_2_2)
Metrics = dict[str, float]

# What a schema holds between cells is emptied, the procedures stay.
DATA_TABLES = (
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "history",
    "executions",
    "instances",
    "kv_store",
    "kv_delta",
    "sessions",
)


@dataclass(frozen=True)
class GridPlan:
    repeats: int = 3
    duration_s: float = 2.0
    worker_items: int = 3_000
    orchestrations: int = 100


def grid_cells() -> list[Cell]:
    cells: list[Cell] = []
    for lock_ms in (1_000, 5_000):
        for dispatchers in (4, 16, 32):
            for instances in (200, 2_000, 20_000):
                cells.append(Cell("light", dispatchers, instances, lock_ms))
        for hot in (2, 8):
            for events in (500, 2_000):
                for payload in (100, 2_000):
                    cells.append(Cell("hot", 16, 50, lock_ms, hot, events, payload))
    return cells


def empty(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [f'"{schema}".{table}' for table in DATA_TABLES]
        row = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".dead_letters']).fetchone()
        if row is not None and row[0] is not None:  # only our schema has dead letters
            tables.append(f'"{schema}".dead_letters')
        conn.execute(f"TRUNCATE {', '.join(tables)}")


def run_grid(url: str, plan: GridPlan) -> list[dict[str, Any]]:
    schemas = {flavour.name: fresh_schema(url, flavour) for flavour in FLAVOURS}
    rows: list[dict[str, Any]] = []
    try:
        for number, cell in enumerate(grid_cells(), start=1):
            samples: dict[str, list[Metrics]] = {flavour.name: [] for flavour in FLAVOURS}
            for repeat in range(plan.repeats):
                order: tuple[Flavour, ...] = FLAVOURS if repeat % 2 == 0 else FLAVOURS[::-1]
                for flavour in order:
                    schema = schemas[flavour.name]
                    empty(url, schema)
                    samples[flavour.name].append(run_cell(url, schema, cell, plan.duration_s))
            figures = {name: medians_with_worst(runs) for name, runs in samples.items()}
            row: dict[str, Any] = {"cell": asdict(cell), "label": cell.label, "figures": figures}
            rows.append(row)
            ours = figures[TASKHUB.name]["turns_per_s"]
            theirs = figures[DUROXIDE_0_2_2.name]["turns_per_s"]
            print(
                f"[{number:2}] {cell.label:<62} {ours:8.0f} vs {theirs:8.0f} turns/s",
                flush=True,
            )
    finally:
        for schema in schemas.values():
            drop_schema(url, schema)
    return rows


def medians_with_worst(runs: list[Metrics]) -> Metrics:
    """Medians of throughput and latency; the worst run of the safety counts."""
    merged = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    for key in ("expired_leases", "ack_failures", "errors"):
        merged[key] = max(run[key] for run in runs)
    merged["min_lease_left_share"] = min(run["min_lease_left_share"] for run in runs)
    return merged


def run_side_scenarios(url: str, plan: GridPlan) -> dict[str, dict[str, Metrics]]:
    scenarios: dict[str, dict[str, Metrics]] = {}
    for variant in ("plain", "sessions", "tags"):
        settings = worker_queue.WorkerSettings(items=plan.worker_items, variant=variant)

        def worker(u: str, s: str, w: worker_queue.WorkerSettings = settings) -> Metrics:
            return worker_queue.run(u, s, w)

        scenarios[f"worker queue, {variant} (8 workers)"] = compare(url, plan.repeats, worker)
        print(f"worker queue {variant} done", flush=True)
    e2e = end_to_end.EndToEndSettings(orchestrations=plan.orchestrations)
    scenarios[f"duroxide runtime end to end ({e2e.orchestrations} fan-outs x {e2e.fan_out})"] = (
        compare(url, plan.repeats, lambda u, s: end_to_end.run(u, s, e2e))
    )
    print("end to end done", flush=True)
    return scenarios


def on_fresh_schema(url: str, flavour: Flavour, measure: Callable[[str, str], Metrics]) -> Metrics:
    schema = fresh_schema(url, flavour)
    try:
        return measure(url, schema)
    finally:
        drop_schema(url, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per cell")
    parser.add_argument("--repeats", type=int, help="runs per cell and schema (medians)")
    parser.add_argument("--duration", type=float, help="seconds per run")
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else embedded)")
    args = parser.parse_args()
    plan = (
        GridPlan(repeats=1, duration_s=0.7, worker_items=1_000, orchestrations=30)
        if (args.quick)
        else GridPlan()
    )
    if args.repeats:
        plan = replace(plan, repeats=args.repeats)
    if args.duration:
        plan = replace(plan, duration_s=args.duration)

    url, cluster = database_url(args.url)
    started = time.perf_counter()
    try:
        grid = run_grid(url, plan)
        side = run_side_scenarios(url, plan)
        alone = {f.name: on_fresh_schema(url, f, hot_fetch_alone) for f in FLAVOURS}
        per_call = {f.name: on_fresh_schema(url, f, server_time_per_call) for f in FLAVOURS}
    finally:
        if cluster is not None:
            cluster.stop()
    document = {
        "plan": asdict(plan),
        "elapsed_s": time.perf_counter() - started,
        "grid": grid,
        "side_scenarios": side,
        "hot_fetch_alone": alone,
        "server_us_per_call": per_call,
    }
    print_grid(document)
    RESULTS.mkdir(exist_ok=True)
    save_json(RESULTS / "grid.json", document)
    save_heat_map(RESULTS / "grid.png", grid)
    print(f"\nresults in {RESULTS / 'grid.json'} and {RESULTS / 'grid.png'}")


if __name__ == "__main__":
    main()
