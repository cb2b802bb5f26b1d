"""`make bench-majors`: the same speed on every supported PostgreSQL major.

For each major in turn, a cluster of its own pinned binaries (as `make
test-matrix` uses), and in one run on it, our schema side by side with the
released duroxide 0.2.2's, alternating which goes first, medians of the
rounds: the server time of a light orchestration turn and of an activity
(fetch + ack, pg_stat_user_functions), one fetch of a hot instance alone
(2,000 events of 2 KB, server time), and the runtime itself end to end
(fan-out orchestrations per second).

    python -m bench.majors [--majors 14,15,16,17,18] [--rounds N] [--quick]

Results: one table on stdout (a row per major, ours / 0.2.2 / ratio for
each figure) and bench/results/majors.json (every run, the medians).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from bench import end_to_end
from bench.per_call import QUICK_CALLS, hot_fetch_alone, server_time_per_call
from bench.sides import alternating_runs, database_url, median_metrics
from bench.targets import ANCHOR, Metrics, with_turns
from devkit import pgbinaries
from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB

RESULTS = Path(__file__).resolve().parent / "results"
FLAVOURS = [TASKHUB, DUROXIDE_0_2_2]
CALLS = 1_000
END_TO_END = end_to_end.EndToEndSettings(orchestrations=100, fan_out=5)
QUICK_END_TO_END = end_to_end.EndToEndSettings(orchestrations=20, fan_out=3)
# (column, the scenario's figure, unit)
COLUMNS = (
    ("light turn", "orchestration turn (fetch + ack)", "us"),
    ("activity", "activity (fetch + ack)", "us"),
    ("hot fetch", "fetch_server_ms", "ms"),
    ("end to end", "orchestrations_per_s", "orch/s"),
)


def measure_major(major: int, rounds: int, quick: bool) -> dict[str, Any]:
    """Every figure of one major, on a cluster of its binaries started here."""
    os.environ["PG_BIN"] = str(pgbinaries.bin_dir(major))
    calls = QUICK_CALLS if quick else CALLS
    settings = QUICK_END_TO_END if quick else END_TO_END
    url, cluster = database_url(None)
    try:
        with psycopg.connect(url) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        server = str(row[0]).split()[0] if row else str(major)
        scenarios: dict[str, Callable[[str, str], Metrics]] = {
            "per_call": lambda u, s: with_turns(server_time_per_call(u, s, calls)),
            "hot_fetch_alone": hot_fetch_alone,
            "end_to_end": lambda u, s: end_to_end.run(u, s, settings),
        }
        runs = {
            name: alternating_runs(url, rounds, scenario, FLAVOURS)
            for name, scenario in scenarios.items()
        }
    finally:
        if cluster is not None:
            cluster.stop()
    medians: dict[str, Metrics] = {flavour.name: {} for flavour in FLAVOURS}
    for by_flavour in runs.values():
        for name, flavour_runs in by_flavour.items():
            medians[name].update(median_metrics(flavour_runs))
    return {"server": server, "medians": medians, "runs": runs}


def table(results: dict[int, dict[str, Any]]) -> list[str]:
    """A row per major: ours, 0.2.2's and the ratio for each figure."""
    header = f"{'major':<14}" + "".join(
        f"{f'{column} ({unit})':>34}" for column, _, unit in COLUMNS
    )
    lines = [header, " " * 14 + "".join(f"{'ours / 0.2.2 (ratio)':>34}" for _ in COLUMNS)]
    for major, result in results.items():
        ours, anchor = result["medians"][TASKHUB.name], result["medians"][ANCHOR]
        cells = ""
        for _, key, _ in COLUMNS:
            share = ours[key] / anchor[key] if anchor[key] else float("nan")
            cells += f"{ours[key]:>14.1f} / {anchor[key]:>8.1f} ({share:.2f}x)"
        lines.append(f"{major:<3}{result['server']:<11}{cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--majors",
        default=",".join(str(m) for m in pgbinaries.MAJORS),
        help="comma-separated majors, default every pinned one",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians), default 3")
    parser.add_argument("--quick", action="store_true", help="short runs: a smoke test")
    args = parser.parse_args()
    majors = [int(m) for m in args.majors.split(",") if m.strip()]
    unknown = sorted(set(majors) - set(pgbinaries.MAJORS))
    if unknown:
        raise SystemExit(f"no pinned binaries for {unknown}: choose from {pgbinaries.MAJORS}")
    started = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    for major in majors:
        began = time.perf_counter()
        results[major] = measure_major(major, args.rounds, args.quick)
        print(
            f"PostgreSQL {results[major]['server']}: {time.perf_counter() - began:.0f} s",
            flush=True,
        )
    rounds = f"medians of {args.rounds} rounds, alternating; server time per call"
    print(f"\nevery major, taskhub against duroxide 0.2.2 ({rounds})")
    print("\n".join(table(results)))
    elapsed = time.perf_counter() - started
    RESULTS.mkdir(exist_ok=True)
    document = {"rounds": args.rounds, "quick": args.quick, "elapsed_s": elapsed, "majors": results}
    (RESULTS / "majors.json").write_text(json.dumps(document, indent=2))
    print(f"\nresults in {RESULTS / 'majors.json'} ({elapsed:.0f} s)")
    spread = {
        column: statistics.pstdev(
            [r["medians"][TASKHUB.name][key] / r["medians"][ANCHOR][key] for r in results.values()]
        )
        for column, key, _ in COLUMNS
        if len(results) > 1
    }
    if spread:
        print(
            "spread of the ratio across majors (std dev): "
            + ", ".join(f"{c} {s:.2f}" for c, s in spread.items())
        )


if __name__ == "__main__":
    main()
