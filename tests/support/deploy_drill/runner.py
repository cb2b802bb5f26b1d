"""A drill round: one phase per starting point, each on a fresh schema with
its own runtime workers, application and lock-wait sampler.

A phase: the runtime runs and the application starts work; every `pause_s`
one migration run (upgrade to head, downgrade back, upgrade again; or adopt a
duroxide 0.2.2 schema and give it back); then the application stops, the
runtime finishes what was started, and everything is checked.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg

from provider.deploy import migrate
from provider.deploy.run_report import MigrationRun
from scripts.workloads.measure import Latencies
from tests.support.chaos.client import HarnessClient
from tests.support.chaos.progress import progress
from tests.support.chaos.side import with_application_name
from tests.support.chaos.verify import check_outcome
from tests.support.chaos.workers import WorkerPool
from tests.support.deploy_drill.application import Application
from tests.support.deploy_drill.lock_waits import LockWaitSampler
from tests.support.flavours import DUROXIDE_0_2_2

RUNTIME_APPLICATION = "drill-runtime"
APPLICATION = "drill-app"
# What the runtime logs when something went wrong (duroxide's tracing lines).
RUNTIME_PROBLEM = re.compile(r"\b(WARN|ERROR)\b")


@dataclass(frozen=True)
class DrillSettings:
    rounds: int = 20
    rate_per_s: float = 20.0
    start_revisions: tuple[str, ...] = ("0005",)
    adoption: bool = True
    workers: int = 2
    pause_s: float = 1.0
    drain_s: float = 60.0


@dataclass
class MigrationOutcome:
    label: str  # "0005 -> head"
    ok: bool
    detail: str  # the run's summary, or its error


@dataclass
class PhaseReport:
    name: str
    schema: str
    migrations: list[MigrationOutcome] = field(default_factory=list)
    orchestrations: int = 0
    failed_or_wrong: int = 0
    unfinished: int = 0
    problems: list[str] = field(default_factory=list)
    application_calls: int = 0
    application_errors: Counter[str] = field(default_factory=Counter)
    runtime_log_problems: list[str] = field(default_factory=list)
    runtime_waits: Latencies = field(default_factory=Latencies)
    application_waits: Latencies = field(default_factory=Latencies)


Step = tuple[str, Callable[[str], MigrationRun]]  # label, run(schema)


def phases(
    settings: DrillSettings, url: str
) -> list[tuple[str, Callable[[str], None], list[Step]]]:
    """(name, build the schema, the migration runs) for each phase of a round."""
    found: list[tuple[str, Callable[[str], None], list[Step]]] = []
    for revision in settings.start_revisions:
        found.append(
            (
                f"from {revision}",
                partial(_build_at, url, revision),
                [
                    (f"{revision} -> head", partial(_upgrade, url, "head")),
                    (f"head -> {revision}", partial(_downgrade, url, revision)),
                    (f"{revision} -> head", partial(_upgrade, url, "head")),
                ],
            )
        )
    if settings.adoption:
        found.append(
            (
                "adopt 0.2.2",
                partial(_build_released, url),
                [
                    ("0.2.2 -> head", partial(_upgrade, url, "head")),
                    ("head -> 0.2.2", partial(_downgrade, url, "base")),
                ],
            )
        )
    return found


def _build_at(url: str, revision: str, schema: str) -> None:
    migrate.upgrade(url, schema, revision)


def _build_released(url: str, schema: str) -> None:
    DUROXIDE_0_2_2.create_schema(url, schema)


def _upgrade(url: str, revision: str, schema: str) -> MigrationRun:
    return migrate.upgrade(url, schema, revision)


def _downgrade(url: str, revision: str, schema: str) -> MigrationRun:
    return migrate.downgrade(url, schema, revision)


def run_phase(
    url: str,
    log_dir: Path,
    settings: DrillSettings,
    name: str,
    build: Callable[[str], None],
    steps: list[Step],
) -> PhaseReport:
    schema = f"drill_{uuid.uuid4().hex[:10]}"
    build(schema)
    report = PhaseReport(name, schema)
    pool = WorkerPool(
        with_application_name(url, RUNTIME_APPLICATION),
        schema,
        settings.workers,
        log_dir / schema,
        module="tests.support.deploy_drill.worker",
    )
    sampler = LockWaitSampler(url, [RUNTIME_APPLICATION, APPLICATION])
    pool.start()
    try:
        sampler.start()
        app = Application(
            with_application_name(url, APPLICATION), schema, schema, settings.rate_per_s
        )
        app.start()
        for label, run in steps:
            time.sleep(settings.pause_s)
            try:
                report.migrations.append(MigrationOutcome(label, True, run(schema).summary()))
            except Exception as error:  # the pipeline step failed
                report.migrations.append(MigrationOutcome(label, False, f"{error}"[:300]))
        time.sleep(settings.pause_s)
        app.stop()
        sampler.stop()
        _settle(url, schema, [*app.calls.pipelines, *app.calls.waiters], settings.drain_s)
        _check(url, schema, app, report)
    finally:
        pool.stop()
    report.runtime_waits = sampler.waits(RUNTIME_APPLICATION)
    report.application_waits = sampler.waits(APPLICATION)
    report.runtime_log_problems = _runtime_problems(log_dir / schema)
    return report


def _settle(url: str, schema: str, instances: list[str], drain_s: float) -> None:
    deadline = time.monotonic() + drain_s
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if progress(conn, schema, instances).finished(len(instances)):
                return
            time.sleep(0.25)


def _check(url: str, schema: str, app: Application, report: PhaseReport) -> None:
    client = HarnessClient(url, schema)
    calls = app.calls
    report.orchestrations = len(calls.pipelines) + len(calls.waiters)
    report.application_calls = calls.calls
    report.application_errors = calls.errors
    with psycopg.connect(url, autocommit=True) as conn:
        outcome = check_outcome(report.name, schema, client, conn, calls.pipelines)
    report.failed_or_wrong = outcome.failed + outcome.wrong_output
    report.unfinished = outcome.unfinished
    report.problems = outcome.problems()
    for instance, n in calls.waiters.items():
        result = client.status(instance)
        if result.status != "Completed":
            report.unfinished += result.status != "Failed"
            report.failed_or_wrong += result.status == "Failed"
            report.problems.append(f"{instance} is {result.status}")
        elif not isinstance(result.output, dict) or result.output.get("n") != n:
            report.failed_or_wrong += 1
            report.problems.append(f"{instance} returned {result.output!r}")


def _runtime_problems(log_dir: Path) -> list[str]:
    lines = []
    for log in sorted(log_dir.glob("worker-*.log")):
        lines += [line.strip() for line in log.read_text(errors="replace").splitlines()]
    return [line for line in lines if RUNTIME_PROBLEM.search(line)]


def run_round(url: str, log_dir: Path, settings: DrillSettings) -> list[PhaseReport]:
    return [
        run_phase(url, log_dir, settings, name, build, steps)
        for name, build, steps in phases(settings, url)
    ]
