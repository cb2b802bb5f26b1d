"""One soak from start to verdicts.

1. A fresh hub (Alembic's head), the runtime's worker processes and one
   Python worker process, each logging in under an application_name of its
   own (so the server's connections can be told apart).
2. The application starts orchestrations at `rate` per second; the retention
   job prunes every minute what ended more than `retention_s` ago.
3. A sample at the end of every minute (sampler.py), printed as it comes.
4. The verdicts (verdicts.py) over the minutes after warm-up.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from drills.chaos.workers import WorkerPool
from drills.harness import PYTHON_PROBLEM, RUNTIME_PROBLEM, Verdict, with_application_name
from drills.soak import backlog, report, verdicts
from drills.soak.application import APPLICATION_NAME as APPLICATION_APP
from drills.soak.application import Application
from drills.soak.completions import Completions
from drills.soak.python_worker import APPLICATION_NAME as PYTHON_WORKER_APP
from drills.soak.retention import RETENTION_APP, Retention
from drills.soak.sampler import Minute, Sampler
from drills.soak.watch import Watch
from provider.deploy import migrate

RUNTIME_APP = "soak-runtime"
CONNECTIONS = {report.PYTHON_WORKER: PYTHON_WORKER_APP, report.RUNTIME: RUNTIME_APP}
# The sample waits this long after the minute ends: completions committed at
# the boundary are visible then.
SAMPLE_LAG_S = 2.0
# An instance started this long before the end and not ended is stuck.
STUCK_AFTER_S = 120.0
# What the runtime says about the workload's deliberate failures and retries.
EXPECTED_LOG_LINE = re.compile(r"failed \(application error\)")


@dataclass(frozen=True)
class SoakSettings:
    minutes: int = 30
    rate: float = 20.0
    warm_up: int = 2
    window: int = 5
    retention_s: float = 30.0
    prune_every_s: float = 60.0
    runtime_workers: int = 2
    minute_s: float = 60.0  # shorter only in the suite's bounded soak
    backlog: int = 0  # messages due tomorrow, seeded before the start (backlog.py)
    upkeep: bool = True  # False: the server's autovacuum defaults on the queues (the anchor)
    revision: str = "head"  # an earlier one soaks the anchor (0025: bitmap scans on the queues)


@dataclass
class SoakResult:
    settings: SoakSettings
    minutes: list[Minute] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    verdicts: list[Verdict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)


def run_soak(url: str, settings: SoakSettings, out_dir: Path, echo: bool = True) -> SoakResult:
    schema = f"soak_{uuid.uuid4().hex[:8]}"
    migrate.upgrade(url, schema, settings.revision)
    if settings.backlog:
        backlog.seed(url, schema, settings.backlog)
    if not settings.upkeep:
        backlog.without_upkeep(url, schema)
    result = SoakResult(settings)

    def say(line: str) -> None:
        result.lines.append(line)
        if echo:
            print(line, flush=True)

    logs = out_dir / "logs"
    shutil.rmtree(logs, ignore_errors=True)  # a log of an earlier soak counts nothing here
    runtime = WorkerPool(
        with_application_name(url, RUNTIME_APP), schema, settings.runtime_workers, logs,
        module="drills.soak.runtime_worker",
    )  # fmt: skip
    python = WorkerPool(url, schema, 1, logs / "python", module="drills.soak.python_worker")
    application = Application(url, schema, settings.rate)
    retention = Retention(url, schema, int(settings.retention_s), settings.prune_every_s)
    sampler = Sampler(url, schema)
    completions = Completions(url, schema, application.book, settings.minute_s)
    watch = Watch(url, set(CONNECTIONS.values()) | {APPLICATION_APP}, RETENTION_APP)
    say(
        f"soak on {schema}: {settings.rate:g} orchestrations/s for {settings.minutes} min"
        f" ({settings.warm_up} min warm-up), {settings.runtime_workers} runtime processes"
        f" + 1 Python worker, prune every {settings.prune_every_s:.0f} s of what ended"
        f" {settings.retention_s:.0f} s ago"
        + (f"; schema at revision {settings.revision}" if settings.revision != "head" else "")
        + (f"; a backlog of {settings.backlog:,} messages due tomorrow" if settings.backlog else "")
        + ("" if settings.upkeep else "; the server's autovacuum defaults on the queues")
    )
    say(report.MINUTE_COLUMNS)
    try:
        runtime.start()
        python.start()
        began, began_epoch_ms = time.monotonic(), time.time() * 1000.0
        completions.start(began_epoch_ms)
        watch.start(began, settings.minute_s)
        application.start()
        retention.start(began)
        for minute in range(1, settings.minutes + 1):
            _sleep_until(began + minute * settings.minute_s + SAMPLE_LAG_S)
            sample = sampler.sample(
                minute,
                settings.minute_s,
                completions.take(minute),
                {report.PYTHON_WORKER: python.pids(), report.RUNTIME: runtime.pids()},
            )
            sample.watch = watch.take(minute)
            sample.prunes = retention.take_finished()
            previous = result.minutes[-1] if result.minutes else None
            result.minutes.append(sample)
            say(report.minute_row(sample, previous, CONNECTIONS))
    finally:
        if application.is_alive():
            application.stop()
        retention.stop()
        sampler.close()
        for observer in (completions, watch):
            observer.stop()
        stats = _python_worker_stats(logs / "python")
        runtime.stop()
        python.stop()

    result.errors = _errors(application, retention, stats, logs, began_epoch_ms, settings)
    result.errors["soak observer errors"] = completions.errors + watch.errors
    _conclude(result, retention, say)
    _write(result, out_dir, schema)
    return result


def _sleep_until(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))


def _python_worker_stats(log_dir: Path) -> dict[str, int]:
    found = sorted(log_dir.glob("*.ready.stats"))
    return json.loads(found[-1].read_text()) if found else {}


def _log_problems(paths: list[Path]) -> int:
    return sum(
        1 for path in paths for line in path.read_text(errors="replace").splitlines()
        if (RUNTIME_PROBLEM.search(line) or PYTHON_PROBLEM.search(line))
        and not EXPECTED_LOG_LINE.search(line)
    )  # fmt: skip


def _errors(
    application: Application,
    retention: Retention,
    stats: dict[str, int],
    logs: Path,
    began_epoch_ms: float,
    settings: SoakSettings,
) -> Counter[str]:
    errors: Counter[str] = Counter()
    errors["application errors"] = sum(application.errors.values())
    errors["prune errors"] = sum(1 for run in retention.runs if run.error is not None)
    errors["runtime log warnings"] = _log_problems(sorted(logs.glob("worker-*.log")))
    errors["python worker log warnings"] = _log_problems(sorted((logs / "python").glob("*.log")))
    for name in ("lost", "poisoned", "renewal_errors"):
        errors[f"python worker {name.replace('_', ' ')}"] = int(stats.get(name, 0))
    stuck_before = time.time() * 1000.0 - STUCK_AFTER_S * 1000.0
    errors["stuck instances"] = application.book.stuck(max(stuck_before, began_epoch_ms))
    return errors


def _conclude(result: SoakResult, retention: Retention, say: Callable[[str], None]) -> None:
    s, minutes = result.settings, result.minutes
    say("")
    for line in report.prune_summary(retention.runs):
        say(line)
    if len(minutes) <= s.warm_up:
        say("too short for verdicts: no minute after the warm-up")
        return
    w = verdicts.windows(minutes, s.warm_up, s.window)
    say("")
    for line in report.table_summary(w.after_warm_up, w.end):
        say(line)
    retained_minute = s.warm_up + int((s.retention_s + s.prune_every_s) // s.minute_s) + 1
    result.verdicts = [
        verdicts.rate_verdict(minutes, s.warm_up, s.rate),
        verdicts.p99_spike_verdict(minutes, s.warm_up),
        verdicts.p99_verdict(w),
        verdicts.queue_tables_verdict(minutes, w),
        verdicts.hub_size_verdict(
            minutes, w, retained_minute, s.rate, s.retention_s, s.prune_every_s
        ),
        verdicts.rss_verdict(report.PYTHON_WORKER, w),
        verdicts.rss_verdict(report.RUNTIME, w),
        verdicts.failures_verdict(minutes, dict(result.errors)),
    ]
    say("")
    for verdict in result.verdicts:
        say(verdict.line())


def _write(result: SoakResult, out_dir: Path, schema: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "soak.txt").write_text("\n".join(result.lines) + "\n")
    if result.minutes and report.can_plot():
        title = f"soak: {result.settings.rate:g}/s, {len(result.minutes)} min ({schema})"
        report.plot(result.minutes, out_dir / "soak.png", title)
