"""One step of the capacity bench: one side, one rate, a few minutes.

A fresh schema (a hub made by our migrations, or duroxide 0.2.2's own made
by its runtime), the released runtime's processes on it, starts at the rate
through the runtime's client, and at the end of each minute: how many root
orchestrations completed, the p99 of their start-to-completion, and the
server's CPU by role (drills/soak/watch.py). On the hub, the retention of
the soak prunes each minute what ended 30 s ago; 0.2.2's schema has no
prune, so it runs without (which favours it: its tables only grow).
"""

from __future__ import annotations

import shutil
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from bench.capacity.starter import APPLICATION_NAME, Starter
from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB
from drills.chaos.workers import WorkerPool
from drills.harness import with_application_name
from drills.soak.completions import Completions
from drills.soak.retention import RETENTION_APP, Retention
from drills.soak.watch import CPU_ROLES, Watch

RUNTIME_APP = "capacity-runtime"
SIDES = (TASKHUB.name, DUROXIDE_0_2_2.name)
SAMPLE_LAG_S = 2.0  # completions committed at a minute's end are visible by then
RETENTION_S = 30
PRUNE_EVERY_S = 60.0


@dataclass(frozen=True)
class StepSettings:
    side: str
    rate: float
    minutes: int = 3
    warm_up: int = 1  # minutes left out of the judgement
    minute_s: float = 60.0
    runtime_processes: int = 1


@dataclass
class MinuteFigures:
    minute: int
    completed: int
    p99_ms: float | None
    cpu_percent: dict[str, float] = field(default_factory=dict)  # role -> % of one core


@dataclass
class StepResult:
    settings: StepSettings
    minutes: list[MinuteFigures] = field(default_factory=list)
    start_errors: int = 0
    in_flight_at_end: int = 0

    def judged(self) -> list[MinuteFigures]:
        return self.minutes[self.settings.warm_up :]

    def holds(self, objective_ms: float, rate_tolerance: float = 0.05) -> bool:
        """Every judged minute: p99 under the objective, and completions
        within the tolerance of the asked rate."""
        s = self.settings
        judged = self.judged()
        return bool(judged) and all(
            m.p99_ms is not None
            and m.p99_ms < objective_ms
            and m.completed / s.minute_s >= s.rate * (1 - rate_tolerance)
            for m in judged
        )

    def worst_p99_ms(self) -> float:
        return max((m.p99_ms or float("inf")) for m in self.judged()) if self.judged() else 0.0

    def completed_per_s(self) -> float:
        judged = self.judged()
        return (
            statistics.mean(m.completed / self.settings.minute_s for m in judged) if judged else 0.0
        )


def p99(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def make_schema(url: str, side: str) -> str:
    schema = f"cap_{uuid.uuid4().hex[:8]}"
    (TASKHUB if side == TASKHUB.name else DUROXIDE_0_2_2).create_schema(url, schema)
    return schema


def run_step(url: str, settings: StepSettings, log_dir: Path) -> StepResult:
    schema = make_schema(url, settings.side)
    result = StepResult(settings)
    shutil.rmtree(log_dir, ignore_errors=True)
    runtime = WorkerPool(
        with_application_name(url, RUNTIME_APP), schema, settings.runtime_processes, log_dir,
        module="bench.capacity.runtime_process",
    )  # fmt: skip
    starter = Starter(with_application_name(url, APPLICATION_NAME), schema, settings.rate)
    completions = Completions(url, schema, starter.book, settings.minute_s)
    watch = Watch(url, {RUNTIME_APP, APPLICATION_NAME}, RETENTION_APP)
    retention = (
        Retention(url, schema, RETENTION_S, PRUNE_EVERY_S)
        if settings.side == TASKHUB.name
        else None
    )
    try:
        runtime.start()
        began, began_epoch_ms = time.monotonic(), time.time() * 1000.0
        completions.start(began_epoch_ms)
        watch.start(began, settings.minute_s)
        starter.start()
        if retention is not None:
            retention.start(began)
        for minute in range(1, settings.minutes + 1):
            time.sleep(
                max(0.0, began + minute * settings.minute_s + SAMPLE_LAG_S - time.monotonic())
            )
            ended = completions.take(minute)
            latencies = [e.completed_ms - e.started.at_ms for e in ended if e.started is not None]
            seen = watch.take(minute)
            cpu = (
                {role: seen.cpu_percent(role, settings.minute_s) for role in CPU_ROLES}
                if seen.cpu_known
                else {}
            )
            result.minutes.append(MinuteFigures(minute, len(ended), p99(latencies), cpu))
    finally:
        if starter.is_alive():
            starter.stop()
        if retention is not None:
            retention.stop()
        for observer in (completions, watch):
            observer.stop()
        runtime.stop()
        result.start_errors = sum(starter.errors.values())
        result.in_flight_at_end = starter.book.in_flight()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return result
