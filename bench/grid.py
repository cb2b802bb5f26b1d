"""`make bench-grid`: the hot path over a grid of loads, on our schema and on a
schema created by the released duroxide 0.2.2 runtime (and any flavour named
with --also), on one server, in one run, alternating which goes first;
medians of `repeats` runs, every run kept.

    python -m bench.grid [--quick] [--repeats N] [--duration S] [--also FLAVOUR ...]
                         [--only CELL ...] [--list-cells] [--url URL | --pg-bin DIR | --major N]

* light: dispatchers {4, 16, 32} x instances {200, 2,000, 20,000}, and
  8 dispatchers x {200, 2,000} instances, 16 dispatchers x 5,000 instances;
* hot: {2, 8} hot instances x {500, 2,000} events x {100 B, 2 KB} payloads,
  beside 50 light instances, 16 dispatchers;
* each of them with a 1 s and a 5 s lock;
* then the worker queue (plain, sessions, tags), the duroxide runtime end to
  end, one fetch of a hot instance alone (against a plain string_agg read of
  the same rows, the floor), and the server time per call and per light turn.

`--only light-8x200` runs the cells whose key is that or starts with it and a
dash (both locks here; `light-8x200-1s` one of them); `--list-cells` prints
the keys.

Results: a table and the verdict on each target of issue 23 on stdout,
bench/results/grid.json and a heat map of the throughput ratio,
bench/results/grid.png.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psycopg

from bench import end_to_end, worker_queue
from bench.grid_report import grid_targets, print_grid, save_heat_map, save_json
from bench.grid_workload import Cell, run_cell
from bench.per_call import (
    CALLS,
    QUICK_CALLS,
    flavours_with,
    hot_fetch_alone,
    server_time_per_call,
)
from bench.server_choice import add_server_options, server_version, use_server_options
from bench.sides import (
    alternating_runs,
    compare,
    database_url,
    drop_schema,
    fresh_schema,
    median_metrics,
)
from bench.targets import ANCHOR, ratio
from devkit.workloads.flavours import ALL, Flavour

RESULTS = Path(__file__).resolve().parent / "results"
Metrics = dict[str, float]

# What a schema holds between cells is emptied, the procedures stay. Only the
# tables a flavour has: an earlier revision may lack some of them.
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
    "dead_letters",
)
# (dispatchers, light instances): the 3 x 3 grid and the loads between its rows.
LIGHT_LOADS = sorted(
    {(d, i) for d in (4, 16, 32) for i in (200, 2_000, 20_000)}
    | {(8, 200), (8, 2_000), (16, 5_000)}
)


@dataclass(frozen=True)
class GridPlan:
    repeats: int = 3
    duration_s: float = 2.0
    worker_items: int = 3_000
    orchestrations: int = 100
    per_call_calls: int = CALLS


QUICK = GridPlan(
    repeats=1, duration_s=0.6, worker_items=1_000, orchestrations=30, per_call_calls=QUICK_CALLS
)


def grid_cells() -> list[Cell]:
    cells: list[Cell] = []
    for lock_ms in (1_000, 5_000):
        for dispatchers, instances in LIGHT_LOADS:
            cells.append(Cell("light", dispatchers, instances, lock_ms))
        for hot in (2, 8):
            for events in (500, 2_000):
                for payload in (100, 2_000):
                    cells.append(Cell("hot", 16, 50, lock_ms, hot, events, payload))
    return cells


def select_cells(cells: list[Cell], only: list[str]) -> list[Cell]:
    """The cells named by key, or by a key's prefix up to a dash; all if none named."""

    def named(cell: Cell, name: str) -> bool:
        return cell.key == name or cell.key.startswith(name + "-")

    unknown = [name for name in only if not any(named(cell, name) for cell in cells)]
    if unknown:
        raise SystemExit(f"no cell matches {unknown}: see --list-cells")
    return [cell for cell in cells if not only or any(named(cell, name) for name in only)]


def empty(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        present = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace"
            " AND relkind IN ('r', 'p') AND relname = ANY(%s)",
            [f'"{schema}"', list(DATA_TABLES)],
        ).fetchall()
        tables = ", ".join(f'"{schema}".{name}' for (name,) in present)
        conn.execute(f"TRUNCATE {tables}")


def run_rounds(
    url: str, schemas: dict[str, str], flavours: Sequence[Flavour], cell: Cell, plan: GridPlan
) -> dict[str, list[Metrics]]:
    """The cell `repeats` times on each flavour's (emptied) schema, alternating the order."""
    runs: dict[str, list[Metrics]] = {flavour.name: [] for flavour in flavours}
    for repeat in range(plan.repeats):
        order = flavours if repeat % 2 == 0 else flavours[::-1]
        for flavour in order:
            schema = schemas[flavour.name]
            empty(url, schema)
            runs[flavour.name].append(run_cell(url, schema, cell, plan.duration_s))
    return runs


def grid_row(cell: Cell, runs: dict[str, list[Metrics]]) -> dict[str, Any]:
    """Medians, every run, and the ratio to 0.2.2 of each round (a round pairs
    the runs that shared a server state): the no-round-below target needs them."""
    anchor = runs[ANCHOR]
    round_ratios = {
        name: [
            ratio(ours["turns_per_s"], theirs["turns_per_s"])
            for ours, theirs in zip(samples, anchor, strict=True)
        ]
        for name, samples in runs.items()
        if name != ANCHOR
    }
    return {
        "cell": asdict(cell),
        "key": cell.key,
        "label": cell.label,
        "figures": {name: medians_with_worst(samples) for name, samples in runs.items()},
        "round_ratios": round_ratios,
        "runs": runs,
    }


def progress_line(number: int, total: int, row: dict[str, Any]) -> str:
    figures = row["figures"]
    ratios = "; ".join(
        f"{name} {figures[name]['turns_per_s']:.0f}/s, rounds "
        + " ".join(f"{r:.2f}x" for r in rounds)
        for name, rounds in row["round_ratios"].items()
    )
    return (
        f"[{number:2}/{total}] {row['label']:<62} 0.2.2 {figures[ANCHOR]['turns_per_s']:.0f}/s;"
        f" {ratios}"
    )


def run_grid(
    url: str, plan: GridPlan, flavours: Sequence[Flavour], cells: list[Cell]
) -> list[dict[str, Any]]:
    schemas = {flavour.name: fresh_schema(url, flavour) for flavour in flavours}
    rows: list[dict[str, Any]] = []
    try:
        for number, cell in enumerate(cells, start=1):
            rows.append(grid_row(cell, run_rounds(url, schemas, flavours, cell, plan)))
            print(progress_line(number, len(cells), rows[-1]), flush=True)
    finally:
        for schema in schemas.values():
            drop_schema(url, schema)
    return rows


def medians_with_worst(runs: list[Metrics]) -> Metrics:
    """Medians of throughput and latency; the worst run of the safety counts."""
    merged = median_metrics(runs)
    for key in ("expired_leases", "ack_failures", "errors"):
        merged[key] = max(run[key] for run in runs)
    merged["min_lease_left_share"] = min(run["min_lease_left_share"] for run in runs)
    return merged


def run_side_scenarios(
    url: str, plan: GridPlan, flavours: Sequence[Flavour]
) -> dict[str, dict[str, Metrics]]:
    scenarios: dict[str, dict[str, Metrics]] = {}
    for variant in ("plain", "sessions", "tags"):
        settings = worker_queue.WorkerSettings(items=plan.worker_items, variant=variant)

        def worker(u: str, s: str, w: worker_queue.WorkerSettings = settings) -> Metrics:
            return worker_queue.run(u, s, w)

        scenarios[f"worker queue, {variant} (8 workers)"] = compare(
            url, plan.repeats, worker, flavours
        )
        print(f"worker queue {variant} done", flush=True)
    e2e = end_to_end.EndToEndSettings(orchestrations=plan.orchestrations)
    scenarios[f"duroxide runtime end to end ({e2e.orchestrations} fan-outs x {e2e.fan_out})"] = (
        compare(url, plan.repeats, lambda u, s: end_to_end.run(u, s, e2e), flavours)
    )
    print("end to end done", flush=True)
    return scenarios


def run_single_client(
    url: str, plan: GridPlan, flavours: Sequence[Flavour]
) -> dict[str, dict[str, list[Metrics]]]:
    """The hot fetch alone and the per-call server time, each in its own alternating rounds."""
    calls = plan.per_call_calls
    alone = alternating_runs(url, plan.repeats, hot_fetch_alone, flavours)
    print("hot fetch alone done", flush=True)
    per_call = alternating_runs(
        url, plan.repeats, lambda u, s: server_time_per_call(u, s, calls), flavours
    )
    print("per call done", flush=True)
    return {"hot_fetch_alone": alone, "server_us_per_call": per_call}


def parse_plan(args: argparse.Namespace) -> GridPlan:
    plan = QUICK if args.quick else GridPlan()
    if args.repeats:
        plan = replace(plan, repeats=args.repeats)
    if args.duration:
        plan = replace(plan, duration_s=args.duration)
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short repeat per cell")
    parser.add_argument("--repeats", type=int, help="runs per cell and schema (medians)")
    parser.add_argument("--duration", type=float, help="seconds per run")
    parser.add_argument(
        "--also", action="append", default=[], choices=sorted(ALL), help="another flavour"
    )
    parser.add_argument("--only", action="append", default=[], help="a cell key (or prefix)")
    parser.add_argument("--list-cells", action="store_true", help="print the cell keys")
    add_server_options(parser)
    args = parser.parse_args()
    cells = select_cells(grid_cells(), args.only)
    if args.list_cells:
        print("\n".join(f"{c.key:<24} {c.label}" for c in cells))
        return
    chosen_url = use_server_options(args)
    plan, flavours = parse_plan(args), flavours_with(args.also)

    url, cluster = database_url(chosen_url)
    started = time.perf_counter()
    try:
        server = server_version(url)
        grid = run_grid(url, plan, flavours, cells)
        side = run_side_scenarios(url, plan, flavours)
        single = run_single_client(url, plan, flavours)
    finally:
        if cluster is not None:
            cluster.stop()
    document: dict[str, Any] = {
        "server": server,
        "plan": asdict(plan),
        "flavours": [f.name for f in flavours],
        "elapsed_s": time.perf_counter() - started,
        "grid": grid,
        "side_scenarios": side,
        **{key: {n: median_metrics(r) for n, r in runs.items()} for key, runs in single.items()},
        **{f"{key}_runs": runs for key, runs in single.items()},
    }
    document["targets"] = {
        f.name: [asdict(t) for t in grid_targets(document, f.name)]
        for f in flavours
        if f.name != ANCHOR
    }
    print(f"PostgreSQL {server}")
    print_grid(document)
    RESULTS.mkdir(exist_ok=True)
    save_json(RESULTS / "grid.json", document)
    save_heat_map(RESULTS / "grid.png", grid)
    print(f"\nresults in {RESULTS / 'grid.json'} and {RESULTS / 'grid.png'}")
    print(f"{len(cells)} cells and the side scenarios in {document['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
