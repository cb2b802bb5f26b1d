"""make deploy-drill: rounds of live deploys, one line per phase, then the totals
and a verdict per target. Exit 1 when a target is missed.

    python -m drills.deploy_drill [--rounds 20] [--rate 20] [--from 0005 ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import psycopg

from devkit.workloads.measure import Latencies
from drills.deploy_drill.runner import CONTROL, DrillSettings, PhaseReport, run_round
from drills.harness import Verdict, exit_status, log_folder, server
from provider.testing.embedded_pg import EmbeddedPostgres

WAIT_TARGET_MS = 250.0


def _line(round_number: int, phase: PhaseReport) -> str:
    ok = sum(m.ok for m in phase.migrations)
    runs = (
        "no deploy      " if phase.name == CONTROL else f"migrations {ok}/{len(phase.migrations)}"
    )
    return (
        f"{round_number:>5}  {phase.name:<16} {runs}"
        f"  orchestrations {phase.orchestrations:>4} (failed or wrong {phase.failed_or_wrong},"
        f" unfinished {phase.unfinished})  app errors {sum(phase.application_errors.values())}"
        f"  runtime WARN+ {len(phase.runtime_log_problems)}"
        f" (on 0.2.2's own {len(phase.released_procedure_problems)})"
        f"  waits runtime p99 {phase.runtime_waits.quantile(0.99):.0f} ms"
        f" max {phase.runtime_waits.maximum:.0f} ms ({len(phase.runtime_waits.samples_ms)} calls),"
        f" app max {phase.application_waits.maximum:.0f} ms"
    )


def report(every_phase: list[PhaseReport]) -> int:
    """Prints the totals and a verdict per target; the exit status."""
    controls = [p for p in every_phase if p.name == CONTROL]
    phases = [p for p in every_phase if p.name != CONTROL]
    if controls:
        lines = sum(len(p.released_procedure_problems) for p in controls)
        print(
            f"  control: duroxide 0.2.2 with no deploy, {len(controls)} phases:"
            f" {lines} runtime log lines at WARN or above"
        )
    runs = [m for p in phases for m in p.migrations]
    runtime = Latencies.merged([p.runtime_waits for p in phases])
    application = Latencies.merged([p.application_waits for p in phases])
    failed = sum(p.failed_or_wrong for p in phases)
    unfinished = sum(p.unfinished for p in phases)
    app_errors = sum(sum(p.application_errors.values()) for p in phases)
    runtime_errors = sum(len(p.runtime_log_problems) for p in phases)
    released = sum(len(p.released_procedure_problems) for p in phases)
    p99 = max(runtime.quantile(0.99), application.quantile(0.99))
    verdicts = [
        Verdict(
            "migration runs succeeded",
            all(m.ok for m in runs),
            f"{sum(m.ok for m in runs)} of {len(runs)}",
        ),
        Verdict(
            "orchestrations failed or wrong",
            failed == unfinished == 0,
            f"{failed}, unfinished: {unfinished} (of {sum(p.orchestrations for p in phases)})",
        ),
        Verdict(
            "errors the application saw",
            app_errors == 0,
            f"{app_errors} (of {sum(p.application_calls for p in phases)} calls)",
        ),
        Verdict(
            "runtime log lines at WARN or above while a deploy could cause them",
            runtime_errors == 0,
            f"{runtime_errors} (and {released} while the hub ran duroxide 0.2.2's own"
            " procedures, before the adoption or after it was given back: its fetch deadlock,"
            " not a deploy's)",
        ),
        Verdict(
            "longest wait on a migration",
            p99 <= WAIT_TARGET_MS,
            f"runtime p99 {runtime.quantile(0.99):.0f} ms,"
            f" max {runtime.maximum:.0f} ms ({len(runtime.samples_ms)} calls blocked);"
            f" application p99 {application.quantile(0.99):.0f} ms,"
            f" max {application.maximum:.0f} ms"
            f" (target p99 <= {WAIT_TARGET_MS:.0f} ms)",
        ),
    ]
    for verdict in verdicts:
        print(verdict.met_line())
    for phase in phases:
        for m in phase.migrations:
            if not m.ok:
                print(f"  failed run ({phase.schema} {m.label}): {m.detail}")
        for message, count in phase.application_errors.items():
            print(f"  application error x{count} ({phase.schema}): {message}")
        for line in phase.runtime_log_problems[:5]:
            print(f"  runtime ({phase.schema}): {line}")
        if phase.runtime_log_problems:
            for m in phase.migrations:
                print(f"    run {m.label}: {m.detail[:160]}")
        for line in phase.released_procedure_problems[:2]:
            print(f"  runtime on 0.2.2's procedures ({phase.schema}): {line[:300]}")
    return exit_status(verdicts)


def _logging_waits(url: str) -> str:
    """Our own cluster, logging who waits on whom and each line's application."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET log_line_prefix = '%m [%p] %a: '")
        conn.execute("ALTER SYSTEM SET log_lock_waits = on")
        conn.execute("SELECT pg_reload_conf()")
    return url


def _deadlocks(cluster: EmbeddedPostgres | None, logs: Path) -> None:
    """The server's own account of each deadlock, if any (our cluster only);
    its whole log is kept beside the runtime's."""
    if cluster is None or not cluster.log_file.exists():
        return
    shutil.copy(cluster.log_file, logs / "server.log")
    lines = cluster.log_file.read_text(errors="replace").splitlines()
    for number, line in enumerate(lines):
        if "deadlock detected" in line:
            print("  server: " + "\n  server: ".join(lines[number : number + 8]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="deploy-drill", description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--rate", type=float, default=20.0, help="orchestrations started per s")
    parser.add_argument(
        "--from",
        dest="start",
        nargs="*",
        default=["0005"],
        help="the released revisions each round starts from (none: adoption only)",
    )
    parser.add_argument("--no-adoption", action="store_true")
    parser.add_argument("--url", help="a server to drill on (default: a cluster of its own)")
    parser.add_argument(
        "--control",
        action="store_true",
        help="add a phase per round on duroxide 0.2.2 with no deploy: its own failure rate",
    )
    args = parser.parse_args(argv)
    settings = DrillSettings(
        rounds=args.rounds,
        rate_per_s=args.rate,
        start_revisions=tuple(args.start),
        adoption=not args.no_adoption,
        control_runs=2 if args.control else 0,
    )
    phases: list[PhaseReport] = []
    with server(args.url, _logging_waits) as found:
        logs = log_folder("deploy-drill-")
        print(
            f"deploy drill: {settings.rounds} rounds at {settings.rate_per_s:.0f}"
            " orchestrations/s; the released duroxide 0.2.2 runtime, 2 worker processes;"
            f" runtime logs in {logs}"
        )
        for number in range(1, settings.rounds + 1):
            for phase in run_round(found.url, logs, settings):
                phases.append(phase)
                print(_line(number, phase), flush=True)
        _deadlocks(found.cluster, logs)
    return report(phases)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
