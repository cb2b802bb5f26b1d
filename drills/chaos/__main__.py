"""`make chaos`: a long chaos run, the side-by-side table, and exit status 1
when our schema lost or failed anything.

    python -m drills.chaos [--orchestrations N] [--seconds S] [--workers W] [--seed N]

Defaults come from CHAOS_ORCHESTRATIONS, CHAOS_SECONDS, CHAOS_WORKERS and
CHAOS_SEED, else settings.ChaosSettings. The server is DATABASE_URL (never
restarted then), else a private cluster started here and removed afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

import psycopg

from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB
from drills.chaos.report import format_report
from drills.chaos.runner import run_chaos
from drills.chaos.settings import ChaosSettings, from_environment
from drills.harness import log_folder, server

CHAOS_DATABASE = "taskhub_chaos"


def parse_settings(argv: list[str]) -> ChaosSettings:
    base = from_environment()
    parser = argparse.ArgumentParser(prog="python -m drills.chaos")
    parser.add_argument(
        "--orchestrations", type=int, default=base.orchestrations, help="orchestrations per side"
    )
    parser.add_argument(
        "--seconds", type=float, default=base.fault_seconds, help="the most seconds of faults"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=base.workers_per_side,
        help="runtime worker processes per side",
    )
    parser.add_argument("--seed", type=int, default=base.seed)
    args = parser.parse_args(argv)
    return replace(
        base,
        orchestrations=args.orchestrations,
        fault_seconds=args.seconds,
        workers_per_side=args.workers,
        seed=args.seed,
    )


def fresh_database(server_url: str) -> str:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {CHAOS_DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {CHAOS_DATABASE}")
    # The path alone: the query may name a socket folder, slashes and all.
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{CHAOS_DATABASE}"))


def main(argv: list[str]) -> int:
    settings = parse_settings(argv)
    logs = log_folder("taskhub-chaos-")  # kept: the runtime's own logs
    with server(os.environ.get("DATABASE_URL"), fresh_database) as found:
        # Only a cluster of the drill's own is restarted (found.cluster).
        admin_url = found.url.replace("postgresql+psycopg://", "postgresql://")
        report = run_chaos(admin_url, found.cluster, settings, logs)
    print(format_report(report))
    print(f"runtime worker logs: {logs}")
    ours = report.side(TASKHUB.name).outcome.problems()
    if not report.side(DUROXIDE_0_2_2.name).outcome.problems():
        print(f"note: {DUROXIDE_0_2_2.name} came through unharmed: the faults did not bite")
    if ours:
        print(f"FAILED on {TASKHUB.name}: " + "; ".join(ours))
        return 1
    print(f"{TASKHUB.name}: every orchestration completed, nothing lost")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
