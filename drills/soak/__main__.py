"""`make soak`: the hub under a steady mix of work, minute by minute, with
the verdicts of issue 26; exit status 1 when one fails.

    python -m drills.soak [--minutes N] [--rate R] [--retention-minutes M] [--out DIR]

Defaults come from SOAK_MINUTES (30) and SOAK_RATE (20 orchestrations/s).
The server is DATABASE_URL, else a private cluster started here and removed
afterwards. The table, its verdicts and the plot land in --out
(default /tmp/taskhub-soak): soak.txt, soak.png, and the workers' logs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from drills.harness import exit_status, server
from drills.soak.runner import SoakSettings, run_soak


def parse(argv: list[str]) -> tuple[SoakSettings, Path]:
    parser = argparse.ArgumentParser(prog="python -m drills.soak")
    parser.add_argument("--minutes", type=int, default=int(os.environ.get("SOAK_MINUTES", 30)))
    parser.add_argument("--rate", type=float, default=float(os.environ.get("SOAK_RATE", 20)))
    parser.add_argument("--warm-up", type=int, default=2, help="minutes before the first window")
    parser.add_argument("--window", type=int, default=5, help="minutes compared, first and last")
    parser.add_argument(
        "--retention-minutes",
        type=float,
        default=0.5,
        help="prune each minute what ended this long ago (an operator's cron of issue 39: 30 s)",
    )
    parser.add_argument("--runtime-workers", type=int, default=2)
    parser.add_argument(
        "--backlog", type=int, default=0, help="messages due tomorrow, seeded before the start"
    )
    parser.add_argument(
        "--without-upkeep",
        action="store_true",
        help="the server's autovacuum defaults on the queue tables (the anchor to 0021)",
    )
    parser.add_argument(
        "--revision", default="head", help="soak the schema as this revision left it (an anchor)"
    )
    parser.add_argument("--out", type=Path, default=Path("/tmp/taskhub-soak"))
    args = parser.parse_args(argv)
    settings = SoakSettings(
        minutes=args.minutes,
        rate=args.rate,
        warm_up=args.warm_up,
        window=args.window,
        retention_s=args.retention_minutes * 60,
        runtime_workers=args.runtime_workers,
        backlog=args.backlog,
        upkeep=not args.without_upkeep,
        revision=args.revision,
    )
    return settings, args.out


def main(argv: list[str]) -> int:
    settings, out_dir = parse(argv)
    with server(os.environ.get("DATABASE_URL")) as found:
        result = run_soak(found.url, settings, out_dir)
    print(f"\ntable, verdicts and plot: {out_dir}/soak.txt, {out_dir}/soak.png")
    return exit_status(result.verdicts)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
