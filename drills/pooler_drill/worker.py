"""Our ActivityWorker behind the pooler: slow activities that outlive their
lease several times over (each must be renewed, none lost), and quick ones
queued while every slot is idle, which only a wakeup starts before the slow
poll would. Afterwards: the worker's statistics, what the provider logged at
WARNING or above, and where its wakeup listener is registered."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from devkit.waiting import wait_until
from devkit.workloads.work_items import activity_execute
from drills.pooler_drill.tally import provider_warnings
from provider import ActivityContext, ActivityWorker, TaskHub
from provider.worker.core import WorkerStats

LEASE_MS = 1_000
SLOW_S = 2.5  # 2.5 leases: renewed at least twice
IDLE_POLL_MS = 2_000  # so that only a wakeup starts a quick item within a second
SLOTS = 4
DONE_WITHIN_S = 30.0

# Each registered listener of the hub, and whether its pid is a server backend.
LISTENERS = """
SELECT l.pid, EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity AS a WHERE a.pid = l.pid)
  FROM {} AS l
"""


@dataclass
class WorkerReport:
    slow: int = 0
    quick: int = 0
    stats: WorkerStats = field(default_factory=WorkerStats)
    warnings: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # the drill's own findings
    listeners: list[tuple[int, bool]] = field(default_factory=list)  # (pid, a backend)
    quick_start_ms: list[float] = field(default_factory=list)  # queued -> handler started

    @property
    def problems(self) -> int:
        """Errors seen: the worker's, the provider's warnings, the drill's."""
        stats = self.stats
        return (
            stats.failed
            + stats.lost
            + stats.renewal_errors
            + stats.poisoned
            + sum(self.warnings.values())
            + sum(self.errors.values())
        )


class _Handlers:
    """The activities; records when each quick one started."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.lock = threading.Lock()

    def slow(self, ctx: ActivityContext, _: Any) -> str:
        ctx.token.wait(SLOW_S)  # work that outlives its lease; returns early only if cancelled
        ctx.token.raise_if_cancelled()
        return "slow done"

    def quick(self, ctx: ActivityContext, _: Any) -> str:
        with self.lock:
            self.started[ctx.activity_id] = time.monotonic()
        return "quick done"


def _listeners(direct_url: str, schema: str) -> list[tuple[int, bool]]:
    query = sql.SQL(LISTENERS).format(sql.Identifier(schema, "taskhub_wakeup_listeners"))
    with psycopg.connect(direct_url, autocommit=True) as conn:
        return [(int(pid), bool(backend)) for pid, backend in conn.execute(query).fetchall()]


def run(
    url: str, direct_url: str, schema: str, settings: dict[str, Any], slow: int, quick: int
) -> WorkerReport:
    """`slow` slow activities at once, then `quick` quick ones one by one,
    each queued once every slot waits."""
    report = WorkerReport(slow=slow, quick=quick)
    handlers = _Handlers()
    with provider_warnings() as warnings:
        try:
            hub = TaskHub.connect(url, schema, worker_lock_timeout_ms=LEASE_MS, **settings)
        except Exception as error:
            report.errors[f"{type(error).__name__}: {error}"] += 1
            report.warnings = warnings
            return report
        with hub:
            worker = ActivityWorker(
                hub, concurrency=SLOTS, idle_poll_ms=IDLE_POLL_MS, max_idle_poll_ms=IDLE_POLL_MS
            )
            worker.register("Slow", handlers.slow)
            worker.register("Quick", handlers.quick)
            with worker:
                _slow_ones(hub, schema, slow, worker)
                report.listeners = _listeners(direct_url, schema)
                _quick_ones(hub, schema, quick, handlers, worker, report)
            report.stats = worker.stats
    report.warnings = warnings
    return report


def _slow_ones(hub: TaskHub, schema: str, count: int, worker: ActivityWorker) -> None:
    for n in range(count):
        hub.enqueue_worker_work(activity_execute(f"{schema}-slow", n + 1, name="Slow"))
    _wait_done(worker, count, "the slow activities")


def _quick_ones(
    hub: TaskHub,
    schema: str,
    count: int,
    handlers: _Handlers,
    worker: ActivityWorker,
    report: WorkerReport,
) -> None:
    base = worker.stats.completed
    for n in range(count):
        # Every slot found nothing and waits (the slow poll has begun).
        time.sleep(0.3)  # idle on purpose: what is measured is a wakeup from idle
        activity_id = 1_000 + n
        queued = time.monotonic()
        hub.enqueue_worker_work(activity_execute(f"{schema}-quick", activity_id, name="Quick"))
        _wait_done(worker, base + n + 1, f"quick activity {activity_id}")
        report.quick_start_ms.append((handlers.started[activity_id] - queued) * 1000)


def _wait_done(worker: ActivityWorker, completed: int, what: str) -> None:
    def done() -> bool:
        stats = worker.stats
        return stats.completed + stats.failed + stats.lost >= completed

    wait_until(done, timeout_s=DONE_WITHIN_S, message=what)
