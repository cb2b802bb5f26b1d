"""A chaos run: both sides at once, the same workload and the same faults.

1. Each side gets a schema, a runtime role with a short statement_timeout,
   worker processes and a harness client; every orchestration is started.
2. The faults run until every side has settled (every orchestration ended and
   both queues empty, or nothing moved for `quiet_seconds`) or the fault time
   is up.
3. Fault-free, the runtime gets time to finish: until every side has settled
   again or `drain_seconds` have passed.
4. Each side is checked (verify.py).
"""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg

from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB
from drills.chaos.client import HarnessClient
from drills.chaos.diagnosis import blocked_statements, warning_kinds
from drills.chaos.faults import (
    BackendTerminator,
    FaultLoop,
    LockWindows,
    ServerRestarter,
    WorkerKiller,
)
from drills.chaos.progress import Progress, SettleWatch, progress
from drills.chaos.server import wait_until_accepting
from drills.chaos.settings import ChaosSettings
from drills.chaos.side import Side, prepared_side
from drills.chaos.verify import SideOutcome, check_outcome
from drills.chaos.workers import WorkerPool
from drills.chaos.workload import PIPELINE
from provider.testing.embedded_pg import EmbeddedPostgres

FLAVOURS = (TASKHUB, DUROXIDE_0_2_2)

# What the runtime logged about the faults that reached it (the workers' log files).
RUNTIME_LOG_PATTERNS = {
    "statement timeouts": "canceling statement due to statement timeout",
    "backend terminations": "terminating connection due to administrator command",
    "connect retries": "connect failed, retrying",
}


@dataclass
class SideRun:
    side: Side
    pool: WorkerPool
    client: HarnessClient
    loops: list[FaultLoop] = field(default_factory=list)


@dataclass(frozen=True)
class SideReport:
    outcome: SideOutcome
    faults: dict[str, int]  # fault -> how many were injected
    runtime_log: dict[str, int]  # RUNTIME_LOG_PATTERNS key -> lines
    finished_s: float | None  # when it was done, from the first fault; None: never
    warnings: list[tuple[str, int]] = field(default_factory=list)  # the most frequent
    blocked: list[str] = field(default_factory=list)  # lock waits at the end


@dataclass(frozen=True)
class ChaosReport:
    settings: ChaosSettings
    sides: list[SideReport]
    restarts: int | None  # None: the server is not ours to restart
    fault_s: float
    wall_s: float

    def side(self, flavour: str) -> SideReport:
        return next(s for s in self.sides if s.outcome.flavour == flavour)


def run_chaos(
    admin_url: str, cluster: EmbeddedPostgres | None, settings: ChaosSettings, log_dir: Path
) -> ChaosReport:
    """Run the workload under faults on both flavours; `cluster` is restarted
    when given (only the tests' own server may be)."""
    began = time.monotonic()
    instances = {f"chaos-{n}": n for n in range(settings.orchestrations)}
    stop = threading.Event()
    with ExitStack() as cleanup:
        runs: list[SideRun] = []
        for flavour in FLAVOURS:
            side = cleanup.enter_context(
                prepared_side(admin_url, flavour, settings.statement_timeout_ms)
            )
            pool = WorkerPool(
                side.runtime_url, side.schema, settings.workers_per_side, log_dir / side.schema
            )
            cleanup.callback(pool.stop)
            runs.append(SideRun(side, pool, HarnessClient(side.harness_url, side.schema)))
        for run in runs:
            run.pool.start()
        for run in runs:
            for instance, n in instances.items():
                run.client.start(instance, PIPELINE, n)

        restarter = _fault_loops(runs, cluster, settings, stop)
        every_loop = [loop for run in runs for loop in run.loops]
        if restarter is not None:
            every_loop.append(restarter)
        # Runs before the pools stop (last in, first out), also on errors.
        cleanup.callback(_stop_faults, every_loop, stop, admin_url)
        faults_began = time.monotonic()
        for loop in every_loop:
            loop.start()
        under_faults = _watch(runs, instances, settings, faults_began)
        under_faults.wait(settings.fault_seconds)
        _stop_faults(every_loop, stop, admin_url)
        fault_s = time.monotonic() - faults_began

        # Fault-free, every side that has not finished gets another chance.
        drain = _watch(runs, instances, settings, faults_began)
        drain.finished_s.update(under_faults.finished_s)
        drain.wait(settings.drain_seconds)
        reports = [_report(run, instances, drain.finished_s.get(run.side.schema)) for run in runs]
    return ChaosReport(
        settings,
        reports,
        None if restarter is None else restarter.injected,
        fault_s,
        time.monotonic() - began,
    )


def _fault_loops(
    runs: list[SideRun],
    cluster: EmbeddedPostgres | None,
    settings: ChaosSettings,
    stop: threading.Event,
) -> ServerRestarter | None:
    """Each side's own faults (in run.loops) and the restarts both sides share."""
    seed = settings.seed
    for run in runs:
        run.loops = [
            BackendTerminator(
                "backends terminated", settings.terminate_every_s, seed, stop, run.side
            ),
            LockWindows(
                "lock windows", settings.lock_every_s, seed, stop, run.side, settings.lock_window_s
            ),
            WorkerKiller("worker processes killed", settings.kill_every_s, seed, stop, run.pool),
        ]
    if cluster is None:
        return None
    return ServerRestarter("immediate restarts", settings.restart_every_s, seed, stop, cluster)


def _stop_faults(loops: list[FaultLoop], stop: threading.Event, admin_url: str) -> None:
    if stop.is_set():
        return  # already stopped: this is the cleanup after a normal run
    stop.set()
    for loop in loops:
        if loop.ident is not None:  # it was started
            loop.join()
    # A restart may have been the last fault: the server must be back up.
    wait_until_accepting(admin_url)
    for loop in loops:
        if loop.crash is not None:
            raise RuntimeError(f"the {loop.fault} fault loop failed") from loop.crash


def _watch(
    runs: list[SideRun], instances: dict[str, int], settings: ChaosSettings, since: float
) -> SettleWatch:
    snapshots = {run.side.schema: partial(_progress, run.side, list(instances)) for run in runs}
    return SettleWatch(snapshots, len(instances), settings.quiet_seconds, since)


def _progress(side: Side, instances: list[str]) -> Progress | None:
    """None while the server does not answer (it is restarting)."""
    try:
        with psycopg.connect(side.harness_url, connect_timeout=5) as conn:
            return progress(conn, side.schema, instances)
    except psycopg.OperationalError:
        return None


def _report(run: SideRun, instances: dict[str, int], finished_s: float | None) -> SideReport:
    with psycopg.connect(run.side.harness_url) as conn:
        outcome = check_outcome(run.side.flavour.name, run.side.schema, run.client, conn, instances)
        blocked = blocked_statements(conn, run.side.role.name)
    log = "".join(path.read_text(errors="replace") for path in run.pool.log_dir.glob("*.log"))
    return SideReport(
        outcome,
        {loop.fault: loop.injected for loop in run.loops},
        {name: log.count(text) for name, text in RUNTIME_LOG_PATTERNS.items()},
        finished_s,
        warning_kinds(log),
        blocked,
    )
