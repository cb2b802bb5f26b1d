"""`make bench-majors`: the same speed on every supported PostgreSQL major.

For each major in turn, a cluster of its own pinned binaries (as `make
test-matrix` uses), and in one run on it, our schema side by side with the
released duroxide 0.2.2's: the server time of a light orchestration turn
and of an activity (fetch + ack, pg_stat_user_functions), one fetch of a hot
instance alone (2,000 events of 2 KB, server time), and the runtime itself
end to end (fan-out orchestrations per second). Each round runs all four on
both sides, in the other order every other round; medians of the rounds.
About 3 minutes per major (15 rounds); --quick is a smoke run of seconds.

    python -m bench.majors [--majors 14,15,16,17,18] [--rounds N] [--quick]

Results: one table on stdout (a row per major, ours / 0.2.2 / ratio for
each figure) and bench/results/majors.json (every run, the medians, the
seconds each scenario took). DATABASE_URL must be unset: every major runs
on a server started here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import end_to_end
from bench.per_call import QUICK_CALLS, hot_fetch_alone, server_time_per_call
from bench.server_choice import refuse_database_url, server_version, use_bin_dir
from bench.sides import alternating_runs, database_url, median_metrics
from bench.targets import ANCHOR, Metrics, with_turns
from devkit import pgbinaries
from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB

RESULTS = Path(__file__).resolve().parent / "results"
FLAVOURS = (TASKHUB, DUROXIDE_0_2_2)


@dataclass(frozen=True)
class Plan:
    """A run's size: by default about 3 minutes per major on 2 cores."""

    rounds: int = 15
    calls: int = 2_000  # light turns and activities per round and side
    orchestrations: int = 200  # end to end, fan-outs of `fan_out` activities
    fan_out: int = 5


HOT_FETCH = "fetch_server_ms"
FLOOR = "string_agg_floor_ms"
QUICK = Plan(rounds=2, calls=QUICK_CALLS, orchestrations=20, fan_out=3)
# (column, the scenario's figure, unit)
COLUMNS = (
    ("light turn", "orchestration turn (fetch + ack)", "us"),
    ("activity", "activity (fetch + ack)", "us"),
    ("hot fetch", "fetch_server_ms", "ms"),
    ("end to end", "orchestrations_per_s", "orch/s"),
)


def measure_major(major: int, plan: Plan) -> dict[str, Any]:
    """Every figure of one major, on a cluster of its binaries started here.
    Each round runs every scenario on both sides, the sides in the other
    order in every other round: a noisy minute on a shared machine then
    falls on both sides and on every scenario, not on one of them."""
    use_bin_dir(pgbinaries.bin_dir(major))
    url, cluster = database_url(None)
    settings = end_to_end.EndToEndSettings(orchestrations=plan.orchestrations, fan_out=plan.fan_out)
    scenarios: dict[str, Callable[[str, str], Metrics]] = {
        "per_call": lambda u, s: with_turns(server_time_per_call(u, s, plan.calls)),
        "hot_fetch_alone": hot_fetch_alone,
        "end_to_end": lambda u, s: end_to_end.run(u, s, settings),
    }
    runs: dict[str, dict[str, list[Metrics]]] = {
        name: {flavour.name: [] for flavour in FLAVOURS} for name in scenarios
    }
    seconds = dict.fromkeys(scenarios, 0.0)
    try:
        server = server_version(url)
        for round_ in range(plan.rounds):
            order = FLAVOURS if round_ % 2 == 0 else FLAVOURS[::-1]
            for name, scenario in scenarios.items():
                began = time.perf_counter()
                for flavour, flavour_runs in alternating_runs(url, 1, scenario, order).items():
                    runs[name][flavour].extend(flavour_runs)
                seconds[name] += time.perf_counter() - began
    finally:
        if cluster is not None:
            cluster.stop()
    medians: dict[str, Metrics] = {flavour.name: {} for flavour in FLAVOURS}
    for by_flavour in runs.values():
        for name, flavour_runs in by_flavour.items():
            medians[name].update(median_metrics(flavour_runs))
    return {"server": server, "seconds": seconds, "medians": medians, "runs": runs}


def table(results: dict[int, dict[str, Any]]) -> list[str]:
    """A row per major: ours, 0.2.2's and the ratio for each figure."""
    header = f"{'major':<14}" + "".join(
        f"{f'{column} ({unit})':>34}" for column, _, unit in COLUMNS
    )
    header += f"{'hot fetch / floor':>22}"
    lines = [
        header,
        " " * 14
        + "".join(f"{'ours / 0.2.2 (ratio)':>34}" for _ in COLUMNS)
        + f"{'ours (string_agg ms)':>22}",
    ]
    for major, result in results.items():
        ours, anchor = result["medians"][TASKHUB.name], result["medians"][ANCHOR]
        cells = ""
        for _, key, _ in COLUMNS:
            share = ours[key] / anchor[key] if anchor[key] else float("nan")
            cells += f"{ours[key]:>14.1f} / {anchor[key]:>8.1f} ({share:.2f}x)"
        # The hot fetch against reading its rows as text (bench.per_call's floor).
        floor = ours.get(FLOOR, float("nan"))
        cells += f"{ours[HOT_FETCH] / floor:>11.2f}x ({floor:>5.1f})"
        lines.append(f"{major:<3}{result['server']:<11}{cells}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--majors",
        default=",".join(str(m) for m in pgbinaries.MAJORS),
        help="comma-separated majors, default every pinned one",
    )
    parser.add_argument(
        "--rounds", type=int, help=f"rounds (medians), default {Plan.rounds} ({QUICK.rounds} quick)"
    )
    parser.add_argument("--quick", action="store_true", help="short runs: a smoke test")
    args = parser.parse_args()
    refuse_database_url("bench.majors")
    plan = QUICK if args.quick else Plan()
    if args.rounds:
        plan = replace(plan, rounds=args.rounds)
    majors = [int(m) for m in args.majors.split(",") if m.strip()]
    unknown = sorted(set(majors) - set(pgbinaries.MAJORS))
    if unknown:
        raise SystemExit(f"no pinned binaries for {unknown}: choose from {pgbinaries.MAJORS}")
    started = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    for major in majors:
        began = time.perf_counter()
        results[major] = measure_major(major, plan)
        print(
            f"PostgreSQL {results[major]['server']}: {time.perf_counter() - began:.0f} s",
            flush=True,
        )
    rounds = f"medians of {plan.rounds} rounds, alternating; server time per call"
    print(f"\nevery major, taskhub against duroxide 0.2.2 ({rounds})")
    print("\n".join(table(results)))
    elapsed = time.perf_counter() - started
    RESULTS.mkdir(exist_ok=True)
    document = {"plan": asdict(plan), "elapsed_s": elapsed, "majors": results}
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
