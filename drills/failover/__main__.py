"""`make failover-drill`: a primary and a streaming standby under the
released runtime's load and our worker's, through a switchover, a crash and
a crash with a lagging standby; per event what happened to every start and
the verdicts. Exit 1 when a target is missed.

    python -m drills.failover [--rate 10] [--seconds 30]
        [--events switchover crash lagging] [--lag 3]
        [--defect permanent-failover-errors|single-host-worker]

Defaults come from FAILOVER_RATE and FAILOVER_SECONDS. The servers are the
drill's own (PG_BIN, else the newest /usr/lib/postgresql/*/bin), removed at
the end; the workers' logs stay in --logs (default: a new folder in /tmp).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from drills.failover import defects
from drills.failover.events import NAMES
from drills.failover.report import event_lines, verdicts
from drills.failover.runner import DrillSettings, run_drill
from drills.harness import exit_status, log_folder


def parse(argv: list[str]) -> tuple[DrillSettings, Path]:
    parser = argparse.ArgumentParser(prog="python -m drills.failover", description=__doc__)
    parser.add_argument(
        "--rate", type=float, default=float(os.environ.get("FAILOVER_RATE", 10)),
        help="orders started per second",
    )  # fmt: skip
    parser.add_argument(
        "--seconds", type=float, default=float(os.environ.get("FAILOVER_SECONDS", 30)),
        help="of load per event (the event a third of the way in)",
    )  # fmt: skip
    parser.add_argument("--events", nargs="+", choices=NAMES, default=list(NAMES))
    parser.add_argument("--lag", type=float, default=3.0, help="s of stalled replication")
    parser.add_argument("--drain", type=float, default=90.0, help="s to settle after the load")
    parser.add_argument("--defect", choices=defects.ALL, help="a defect flavour: must fail")
    parser.add_argument("--logs", type=Path)
    args = parser.parse_args(argv)
    settings = DrillSettings(
        rate_per_s=args.rate,
        seconds=args.seconds,
        events=tuple(args.events),
        lag_s=args.lag,
        drain_s=args.drain,
        defect=args.defect,
    )
    return settings, args.logs or log_folder("failover-drill-")


def main(argv: list[str]) -> int:
    settings, logs = parse(argv)
    logs.mkdir(parents=True, exist_ok=True)
    # The application's pool says each failed reconnection: kept, not printed.
    logging.basicConfig(filename=logs / "application.log", level=logging.WARNING)
    outcomes = run_drill(settings, logs, lambda line: print(line, flush=True))
    print()
    for outcome in outcomes:
        print("\n".join(event_lines(outcome)))
    print()
    found = [verdict for outcome in outcomes for verdict in verdicts(outcome)]
    for verdict in found:
        print(f"  {verdict.line()}")
    return exit_status(found)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
