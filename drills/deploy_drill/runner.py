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
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import psycopg

from devkit.workloads.flavours import DUROXIDE_0_2_2
from devkit.workloads.measure import Latencies
from drills.chaos.client import HarnessClient
from drills.chaos.progress import progress
from drills.chaos.verify import check_outcome
from drills.chaos.workers import WorkerPool
from drills.deploy_drill.application import Application
from drills.deploy_drill.lock_waits import LockWaitSampler
from drills.harness import ANSI, RUNTIME_PROBLEM, with_application_name
from provider.deploy import migrate
from provider.deploy.run_report import MigrationRun

RUNTIME_APPLICATION = "drill-runtime"
CONTROL = "0.2.2, no deploy"  # the phase with no deploy at all
APPLICATION = "drill-app"
# sqlx's slow statement lines say how long the statement ran: "elapsed=1.0027s".
ELAPSED = re.compile(r"\belapsed=([0-9.]+)(s|ms|µs|us|ns)\b")
SAME_STATEMENT_S = 0.005


@dataclass(frozen=True)
class DrillSettings:
    rounds: int = 20
    rate_per_s: float = 20.0
    start_revisions: tuple[str, ...] = ("0005",)
    adoption: bool = True
    # A phase per round with duroxide 0.2.2's schema and no deploy at all: how
    # often its own procedures fail at this load (0: no such phase).
    control_runs: int = 0
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
    # What the runtime logged at WARN or above while a deploy could have
    # caused it; and, in an adoption phase, while the hub ran duroxide
    # 0.2.2's own procedures (before the adoption, after it was given back),
    # whose known defects (the seed report's fetch deadlock) are not ours.
    runtime_log_problems: list[str] = field(default_factory=list)
    released_procedure_problems: list[str] = field(default_factory=list)
    runtime_waits: Latencies = field(default_factory=Latencies)
    application_waits: Latencies = field(default_factory=Latencies)


Step = tuple[str, Callable[[str], MigrationRun]]  # label, run(schema)


@dataclass(frozen=True)
class Phase:
    name: str
    build: Callable[[str], None]  # the schema the runtime starts on
    steps: list[Step]  # the migration runs, one every pause_s
    # The hub runs duroxide 0.2.2's own procedures before the first run and
    # after the last: what the runtime logs then is not the deploy's doing.
    released_outside: bool = False


def phases(settings: DrillSettings, url: str) -> list[Phase]:
    """The phases of a round."""
    found = [
        Phase(
            f"from {revision}",
            partial(_build_at, url, revision),
            [
                (f"{revision} -> head", partial(_upgrade, url, "head")),
                (f"head -> {revision}", partial(_downgrade, url, revision)),
                (f"{revision} -> head", partial(_upgrade, url, "head")),
            ],
        )
        for revision in settings.start_revisions
    ]
    if settings.adoption:
        found.append(
            Phase(
                "adopt 0.2.2",
                partial(_build_released, url),
                [
                    ("0.2.2 -> head", partial(_upgrade, url, "head")),
                    ("head -> 0.2.2", partial(_downgrade, url, "base")),
                ],
                released_outside=True,
            )
        )
    if settings.control_runs:
        found.append(
            Phase(
                CONTROL,
                partial(_build_released, url),
                [("no deploy", _no_deploy)] * settings.control_runs,
                released_outside=True,
            )
        )
    return found


def _no_deploy(schema: str) -> MigrationRun:
    """A control step: as long as a migration run takes, and nothing happens."""
    time.sleep(0.2)
    return MigrationRun(schema)


def _build_at(url: str, revision: str, schema: str) -> None:
    migrate.upgrade(url, schema, revision)


def _build_released(url: str, schema: str) -> None:
    DUROXIDE_0_2_2.create_schema(url, schema)


def _upgrade(url: str, revision: str, schema: str) -> MigrationRun:
    return migrate.upgrade(url, schema, revision)


def _downgrade(url: str, revision: str, schema: str) -> MigrationRun:
    return migrate.downgrade(url, schema, revision)


def run_phase(url: str, log_dir: Path, settings: DrillSettings, phase: Phase) -> PhaseReport:
    schema = f"drill_{uuid.uuid4().hex[:10]}"
    phase.build(schema)
    report = PhaseReport(phase.name, schema)
    pool = WorkerPool(
        with_application_name(url, RUNTIME_APPLICATION),
        schema,
        settings.workers,
        log_dir / schema,
        module="drills.deploy_drill.worker",
    )
    sampler = LockWaitSampler(url, [RUNTIME_APPLICATION, APPLICATION])
    pool.start()
    try:
        sampler.start()
        app = Application(
            with_application_name(url, APPLICATION), schema, schema, settings.rate_per_s
        )
        app.start()
        ours_from: float | None = None  # when the hub began to run our procedures
        last_run_ended = float("inf")
        for label, run in phase.steps:
            time.sleep(settings.pause_s)
            try:
                started = time.time()
                done = run(schema)
                ours_from = ours_from or done.first_revision_done_at
                last_run_ended = time.time()
                when = f"{_clock(started)}-{_clock(last_run_ended)}: "
                report.migrations.append(MigrationOutcome(label, True, when + done.summary()))
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
    # In an adoption phase the hub runs duroxide 0.2.2's procedures until the
    # adoption's first revision commits, and again once it is given back: a
    # statement that began outside those times ran 0.2.2's own procedures.
    for began, line in _runtime_problems(log_dir / schema):
        on_released = phase.released_outside and (
            ours_from is None or began < ours_from or began > last_run_ended
        )
        (report.released_procedure_problems if on_released else report.runtime_log_problems).append(
            line
        )
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


def _clock(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%H:%M:%S.%f")[:-3]


def _runtime_problems(log_dir: Path) -> list[tuple[float, str]]:
    """(when its statement began, line) for each line the runtime logged at
    WARN or above. A slow statement's line gives its elapsed time; the error
    line logged right after it belongs to the same statement."""
    found: list[tuple[float, str]] = []
    for log in sorted(log_dir.glob("worker-*.log")):
        previous: tuple[float, float] | None = None  # (logged at, began at)
        for raw in log.read_text(errors="replace").splitlines():
            line = ANSI.sub("", raw).strip()
            if not RUNTIME_PROBLEM.search(line):
                continue
            logged = _logged_at(line)
            began = logged - _elapsed_s(line)
            if previous and 0 <= logged - previous[0] < SAME_STATEMENT_S and not _elapsed_s(line):
                began = previous[1]
            previous = (logged, began)
            found.append((began, line))
    return found


def _logged_at(line: str) -> float:
    try:
        stamp = datetime.fromisoformat(line.split(" ", 1)[0].rstrip("Z"))
    except ValueError:  # a line without a time counts as the deploy's
        return float("nan")
    return stamp.replace(tzinfo=UTC).timestamp()


def _elapsed_s(line: str) -> float:
    found = ELAPSED.search(line)
    if not found:
        return 0.0
    value, unit = float(found.group(1)), found.group(2)
    return value * {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}[unit]


def run_round(url: str, log_dir: Path, settings: DrillSettings) -> list[PhaseReport]:
    return [run_phase(url, log_dir, settings, phase) for phase in phases(settings, url)]
