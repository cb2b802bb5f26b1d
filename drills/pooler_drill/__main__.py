"""make pooler-drill: each mode's parts, what ran and every error; then the
verdicts. Exit 1 when a target is missed.

    python -m drills.pooler_drill [--seconds 6] [--orchestrations 50] [--url URL]
"""

from __future__ import annotations

import argparse
import logging
import signal
import subprocess
import sys
from dataclasses import replace

import psycopg

from devkit.pgbouncer import PGBOUNCER, pgbouncer
from drills.harness import exit_status, log_folder, server
from drills.pooler_drill.report import mode_lines, verdicts
from drills.pooler_drill.runner import (
    Bouncers,
    ModeReport,
    Sizes,
    documented_modes,
    evidence_modes,
    run_mode,
)

TRANSACTION_POOL = 4  # server connections shared by every client of a login
# Session pooling pins a server connection to each client: room for every
# client the drill opens at once (hub pools, listeners, the runtime's pools).
SESSION_POOL = 60


def _versions(url: str) -> str:
    bouncer = subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True)
    with psycopg.connect(url) as conn:
        server = conn.execute("SHOW server_version").fetchone()
    first = bouncer.stdout.splitlines()[0] if bouncer.stdout else "PgBouncer ?"
    return f"{first}, PostgreSQL {server[0] if server else '?'}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pooler-drill", description=__doc__)
    parser.add_argument("--seconds", type=float, default=Sizes.seconds, help="per load part")
    parser.add_argument("--threads", type=int, default=Sizes.threads)
    parser.add_argument("--orchestrations", type=int, default=Sizes.orchestrations)
    parser.add_argument("--latency-samples", type=int, default=Sizes.latency_samples)
    parser.add_argument(
        "--url",
        help="a server PgBouncer may reach without a password (default: a cluster of its own)",
    )
    args = parser.parse_args(argv)
    # Stopped by a signal, it still stops its PgBouncers and its cluster.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = replace(
        Sizes(),
        seconds=args.seconds,
        threads=args.threads,
        orchestrations=args.orchestrations,
        latency_samples=args.latency_samples,
    )
    logs = log_folder("pooler-drill-")
    # The provider's and psycopg's own log lines go to a file; the drill
    # counts the provider's WARNING+ lines itself.
    logging.basicConfig(filename=logs / "drill.log", level=logging.WARNING)
    reports: list[ModeReport] = []
    with server(args.url) as found:
        url = found.url
        with (
            pgbouncer(url, "transaction", TRANSACTION_POOL) as transaction,
            pgbouncer(url, "session", SESSION_POOL) as session,
        ):
            bouncers = Bouncers(transaction, session)
            print(
                f"pooler drill: {_versions(url)}; default_pool_size {TRANSACTION_POOL}"
                f" (transaction), {SESSION_POOL} (session); logs in {logs}",
                flush=True,
            )
            for mode in documented_modes(bouncers, url) + evidence_modes():
                report = run_mode(mode, bouncers, url, sizes, logs)
                reports.append(report)
                print("\n".join(mode_lines(report, sizes)), flush=True)
    print("verdicts (the documented settings):")
    judged = verdicts(reports)
    for verdict in judged:
        print(verdict.met_line())
    return exit_status(judged)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
