"""A hub distributed by Citus side by side with the same hub on plain
PostgreSQL, on the same machine and in the same run (issue 27).

    python -m bench.citus --citus COORDINATOR_URL [--plain URL] [--rounds N] [--quick]

Sides, each on a fresh hub every round, in alternating order:
  plain PostgreSQL       the hub on a plain server (--plain, DATABASE_URL, or
                         an embedded cluster started here)
  Citus, one hop         the hub distributed (`--citus schema`), its clients
                         on the node that holds it (taskhub-pg citus placement)
  Citus, coordinator     the same, its clients on the coordinator (each
                         statement of a call a round trip to the node)
  Citus server, not      the hub on the coordinator without --citus: what
    distributed          Citus loaded in a server costs tables it does not own
Workloads: uniform light work (bench.uniform: every turn appends an event and
sends the instance a message) and the duroxide 0.2.2 runtime end to end
(bench.end_to_end: fan-out orchestrations). Medians of the rounds, and each
side's ratio to plain PostgreSQL; the target is 0.7x for the one-hop side.
Results on stdout and in bench/results/citus.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from bench import end_to_end, uniform
from bench.sides import database_url
from provider.deploy import migrate
from provider.operations import citus

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = 0.7
PLAIN, ONE_HOP, COORDINATOR = "plain PostgreSQL", "Citus, one hop", "Citus, coordinator"
LOCAL = "Citus server, not distributed"
SIDES = (PLAIN, ONE_HOP, COORDINATOR, LOCAL)


@dataclass(frozen=True)
class Plan:
    rounds: int = 3
    uniform: uniform.UniformSettings = field(
        default_factory=lambda: uniform.UniformSettings(dispatchers=4, duration_s=8.0)
    )
    end_to_end: end_to_end.EndToEndSettings = field(
        default_factory=lambda: end_to_end.EndToEndSettings(orchestrations=100)
    )


QUICK = Plan(
    rounds=1,
    uniform=uniform.UniformSettings(instances=50, dispatchers=2, duration_s=2.0),
    end_to_end=end_to_end.EndToEndSettings(orchestrations=10, fan_out=2),
)
# workload name -> (the metric compared, how to run one side on (url, schema))
Workload = tuple[str, Callable[[Plan, str, str], dict[str, float]]]
WORKLOADS: dict[str, Workload] = {
    "uniform light work": ("turns_per_s", lambda p, u, s: uniform.run(u, s, p.uniform)),
    "runtime end to end": (
        "orchestrations_per_s",
        lambda p, u, s: end_to_end.run(u, s, p.end_to_end),
    ),
}


def placement_url(coordinator: str, schema: str) -> str:
    """The URL of the node that holds the hub (taskhub-pg citus placement)."""
    with psycopg.connect(coordinator, autocommit=True) as conn:
        return citus.placement(conn, coordinator, schema).url


def side_hub(side: str, plain: str, coordinator: str) -> tuple[str, str, str]:
    """A fresh hub for the side: (the URL its clients use, schema, URL to drop it)."""
    schema = f"bench_cit_{uuid.uuid4().hex[:8]}"
    if side == PLAIN:
        migrate.upgrade(plain, schema)
        return plain, schema, plain
    if side == LOCAL:
        migrate.upgrade(coordinator, schema)
        return coordinator, schema, coordinator
    migrate.upgrade(coordinator, schema, citus="schema")
    url = placement_url(coordinator, schema) if side == ONE_HOP else coordinator
    return url, schema, coordinator


def run_workload(
    plan: Plan, name: str, plain: str, coordinator: str
) -> dict[str, list[dict[str, float]]]:
    runs: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    run = WORKLOADS[name][1]
    for number in range(plan.rounds):
        for side in SIDES if number % 2 == 0 else SIDES[::-1]:
            url, schema, owner = side_hub(side, plain, coordinator)
            try:
                result = run(plan, url, schema)
            finally:
                migrate.downgrade(owner, schema, "base")
            runs[side].append(result)
            print(f"  round {number + 1} {name}, {side}: {_one_line(result)}", flush=True)
    return runs


def _one_line(result: dict[str, float]) -> str:
    return ", ".join(f"{key} {value:.1f}" for key, value in result.items())


def report(name: str, runs: dict[str, list[dict[str, float]]]) -> list[str]:
    metric = WORKLOADS[name][0]
    medians = {side: statistics.median(r[metric] for r in runs[side]) for side in SIDES}
    lines = [f"{name}: {metric}, medians of {len(runs[PLAIN])} rounds, ratio to plain"]
    for side in SIDES:
        errors = sum(r.get("errors", 0.0) + r.get("failed", 0.0) for r in runs[side])
        ratio = medians[side] / medians[PLAIN] if medians[PLAIN] else 0.0
        lines.append(f"  {side:30s} {medians[side]:10.1f}   {ratio:5.2f}x   errors {errors:.0f}")
    one_hop = medians[ONE_HOP] / medians[PLAIN] if medians[PLAIN] else 0.0
    verdict = "MET   " if one_hop >= TARGET else "MISSED"
    lines.append(f"  {verdict} one hop >= {TARGET}x of plain PostgreSQL: {one_hop:.2f}x")
    return lines


def move_pause(coordinator: str, seconds_before: float = 1.0) -> dict[str, float]:
    """The pause a live move causes: a client enqueues on the hub's node every
    2 ms while `taskhub-pg citus move` takes the hub to the other worker; the
    longest an enqueue took, against its median."""
    schema = f"bench_mv_{uuid.uuid4().hex[:8]}"
    migrate.upgrade(coordinator, schema, citus="schema")
    try:
        with psycopg.connect(coordinator, autocommit=True) as conn:
            here = citus.hub_node(conn, schema)
            there = next(node for node in citus.workers(conn) if node != here)
        latencies: list[float] = []
        stop = threading.Event()

        def probe() -> None:
            with psycopg.connect(placement_url(coordinator, schema), autocommit=True) as conn:
                item = '{"ExternalRaised": {"instance": "probe", "name": "Go", "data": "{}"}}'
                while not stop.is_set():
                    started = time.perf_counter()
                    conn.execute(
                        f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())',
                        ["probe", item],
                    )
                    latencies.append((time.perf_counter() - started) * 1000)
                    time.sleep(0.002)

        prober = threading.Thread(target=probe)
        prober.start()
        time.sleep(seconds_before)
        with psycopg.connect(coordinator, autocommit=True) as mover:
            moved = citus.move(mover, schema, there)
        time.sleep(seconds_before)
        stop.set()
        prober.join()
    finally:
        migrate.downgrade(coordinator, schema, "base")
    return {
        "move_s": moved.seconds,
        "enqueues": float(len(latencies)),
        "enqueue_median_ms": statistics.median(latencies),
        "enqueue_max_ms": max(latencies),
    }


def run_all(plan: Plan, plain: str, coordinator: str) -> dict[str, Any]:
    document: dict[str, Any] = {"plan": asdict(plan), "workloads": {}}
    for name in WORKLOADS:
        runs = run_workload(plan, name, plain, coordinator)
        document["workloads"][name] = {"runs": runs, "report": report(name, runs)}
    pause = move_pause(coordinator)
    document["move_pause"] = pause
    document["workloads"]["live move"] = {
        "report": [
            "live move of a hub (taskhub-pg citus move) under a client enqueueing every 2 ms",
            f"  the move took {pause['move_s']:.2f} s; {pause['enqueues']:.0f} enqueues, median"
            f" {pause['enqueue_median_ms']:.2f} ms, the longest {pause['enqueue_max_ms']:.0f} ms"
            " (the pause), 0 failed",
        ]
    }
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--citus", default=os.environ.get("CITUS_DATABASE_URL"))
    parser.add_argument("--plain", help="plain server (default: DATABASE_URL, else embedded)")
    parser.add_argument("--rounds", type=int, help="rounds (medians), default 3")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args()
    if not args.citus:
        raise SystemExit("no Citus coordinator: pass --citus URL or set CITUS_DATABASE_URL")
    plan = QUICK if args.quick else Plan()
    if args.rounds:
        plan = Plan(args.rounds, plan.uniform, plan.end_to_end)
    plain, cluster = database_url(args.plain)
    started = time.perf_counter()
    try:
        document = run_all(plan, plain, args.citus)
    finally:
        if cluster is not None:
            cluster.stop()
    document["elapsed_s"] = time.perf_counter() - started
    print()
    for workload in document["workloads"].values():
        print("\n".join(workload["report"]))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "citus.json").write_text(json.dumps(document, indent=1, default=str))
    print(f"\nresults in {RESULTS / 'citus.json'} ({document['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
