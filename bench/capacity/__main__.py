"""`make capacity`: the released runtime on a hub and on duroxide 0.2.2's own
schema, at rising steady rates, each step a few minutes on a fresh schema,
the two sides alternating which goes first; a side stops climbing at the
first rate it cannot hold.

    python -m bench.capacity [--rates 40,60,...] [--minutes 3] [--objective-ms 500]

The server is DATABASE_URL, else a private cluster started here. Results:
a line a step as it ends, the capacities and their ratio, and in --out
(default bench/results/capacity) capacity.json and capacity.png.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from bench.capacity import report
from bench.capacity.step import SIDES, StepResult, StepSettings, run_step
from bench.server_choice import server_version
from bench.sides import database_url

RESULTS = Path(__file__).resolve().parent.parent / "results" / "capacity"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.capacity")
    parser.add_argument("--rates", default="40,60,80,100,120,140")
    parser.add_argument(
        "--minutes", type=int, default=3, help="minutes a step (the first is warm-up)"
    )
    parser.add_argument(
        "--minute-s", type=float, default=60.0, help="a minute's length (smoke runs)"
    )
    parser.add_argument("--objective-ms", type=float, default=500.0)
    parser.add_argument("--runtime-processes", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rates = sorted(float(rate) for rate in args.rates.split(",") if rate.strip())
    url, cluster = database_url(None)
    steps: list[StepResult] = []
    climbing = set(SIDES)
    try:
        print(f"capacity on PostgreSQL {server_version(url)}, {report.machine()}", flush=True)
        for index, rate in enumerate(rates):
            order = SIDES if index % 2 == 0 else SIDES[::-1]
            for side in (side for side in order if side in climbing):
                settings = StepSettings(
                    side, rate, args.minutes, minute_s=args.minute_s,
                    runtime_processes=args.runtime_processes,
                )  # fmt: skip
                step = run_step(url, settings, args.out / "logs" / f"{side}-{rate:g}")
                steps.append(step)
                print(report.step_line(step, args.objective_ms), flush=True)
                if not step.holds(args.objective_ms):
                    climbing.discard(side)
            if not climbing:
                break
    finally:
        if cluster is not None:
            cluster.stop()
    print()
    print("\n".join(report.summary(steps, args.objective_ms)))
    args.out.mkdir(parents=True, exist_ok=True)
    document = {
        "objective_ms": args.objective_ms,
        "machine": report.machine(),
        "capacity": {side: report.capacity(steps, side, args.objective_ms) for side in SIDES},
        "steps": [asdict(step) for step in steps],
    }
    (args.out / "capacity.json").write_text(json.dumps(document, indent=2))
    title = f"p99 against rate ({args.minutes} min steps)"
    if report.plot(steps, args.out / "capacity.png", args.objective_ms, title):
        print(f"plot: {args.out / 'capacity.png'}")


if __name__ == "__main__":
    main()
