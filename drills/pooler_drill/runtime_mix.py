"""The released duroxide 0.2.2 runtime through the pooler: two worker
processes of the chaos workload (a chain of activities, a fan-out, a
sub-orchestration and a timer: drills/chaos/workload.py), the
orchestrations started by the runtime's own client, also through the
pooler; then, read on the server directly, how each one ended, and what the
runtime logged at WARN or above.

Its driver names and prepares its statements, so through transaction
pooling it cannot work: there the drill prints what happens, not a target."""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duroxide
import psycopg
from psycopg.conninfo import conninfo_to_dict

from devkit.pgbouncer import PgBouncer, advisory_locks
from devkit.workloads.flavours import TASKHUB
from drills.chaos.client import HarnessClient
from drills.chaos.progress import SettleWatch, progress
from drills.chaos.side import prepared_side
from drills.chaos.verify import SideOutcome, check_outcome
from drills.chaos.workers import WorkerPool, WorkerStartError
from drills.chaos.workload import PIPELINE
from drills.harness import ANSI, RUNTIME_PROBLEM, with_application_name
from drills.pooler_drill.tally import NUMBER, Tally
from provider import TaskHub

RUNTIME_APPLICATION = "pooler-drill-runtime"
WORKERS = 2
# The runtime role's statement timeout (ALTER ROLE, so it holds through any pooler).
STATEMENT_TIMEOUT_MS = 5_000
READY_TIMEOUT_S = 20.0  # through a pooler it cannot use, a worker may never be ready
CONNECT_FOR_S = 10.0  # the client's connect, tried again meanwhile (it may fail at random)
CONNECT_PAUSE_S = 0.25
# A line of the runtime's log, less its time stamp and span fields.
LOGGED_AT = re.compile(r"^\S+\s+")
LINE_CHARS = 220


@dataclass
class RuntimeReport:
    started_by: str = "the runtime's client"
    connects: Tally = field(default_factory=Tally)  # the client's connects
    started: Tally = field(default_factory=Tally)  # the client's starts
    outcome: SideOutcome | None = None
    runtime_log: Counter[str] = field(default_factory=Counter)  # WARN+ lines, folded
    not_started: str | None = None  # why the runtime did not start, if it did not
    leaked_locks: list[tuple[Any, ...]] = field(default_factory=list)  # advisory, held

    @property
    def correct(self) -> bool:
        outcome = self.outcome
        return (
            self.not_started is None
            and self.connects.error_count == 0
            and self.started.error_count == 0
            and outcome is not None
            and outcome.completed == outcome.orchestrations > 0
            and not outcome.problems()
            and not self.leaked_locks
        )


def run(
    bouncer: PgBouncer,
    direct_url: str,
    settings: dict[str, Any],
    orchestrations: int,
    log_dir: Path,
    settle_s: float,
    quiet_s: float,
) -> RuntimeReport:
    """`orchestrations` pipelines on a fresh hub whose runtime role logs in
    through `bouncer` (`settings`: our TaskHub's, should the runtime's client
    not connect); that role's statements time out after
    STATEMENT_TIMEOUT_MS, so that nothing the pooler does to the runtime
    can hang the drill."""
    report = RuntimeReport()
    with prepared_side(direct_url, TASKHUB, STATEMENT_TIMEOUT_MS) as side:
        url = bouncer.url(side.role.url)
        pool = WorkerPool(
            with_application_name(url, RUNTIME_APPLICATION), side.schema, WORKERS, log_dir
        )
        try:
            pool.start(READY_TIMEOUT_S)
        except WorkerStartError as error:
            report.not_started = str(error)
        try:
            started = _start_all(url, side.schema, orchestrations, settings, report)
            _settle(direct_url, side.schema, started, settle_s, quiet_s)
        finally:
            pool.stop()
        # The runtime's connect takes a session advisory lock (its migration
        # runner's); through transaction pooling the unlock may reach another
        # server connection, and the lock stays on the first for good: every
        # later connect of the runtime waits on it, direct ones too. Counted,
        # then PgBouncer closes the pool's server connections.
        report.leaked_locks = [lock for lock in advisory_locks(direct_url) if lock[-1]]
        bouncer.reset_servers(str(conninfo_to_dict(direct_url)["dbname"]))
        report.outcome = _outcome(direct_url, side.schema, started)
        report.runtime_log = _problems(log_dir)
    return report


def _settle(
    direct_url: str, schema: str, started: dict[str, int], settle_s: float, quiet_s: float
) -> None:
    """Until every started orchestration ended, or none moved for quiet_s."""
    with psycopg.connect(direct_url, autocommit=True) as conn:
        SettleWatch(
            {"pooled": lambda: progress(conn, schema, list(started))},
            len(started),
            quiet_s,
            since=time.monotonic(),
        ).wait(settle_s)


def _outcome(direct_url: str, schema: str, started: dict[str, int]) -> SideOutcome:
    """How each started orchestration ended, read directly."""
    with psycopg.connect(direct_url, autocommit=True) as conn:
        return check_outcome("pooled", schema, HarnessClient(direct_url, schema), conn, started)


def _start_all(
    url: str, schema: str, count: int, settings: dict[str, Any], report: RuntimeReport
) -> dict[str, int]:
    """Start each orchestration once through `url`, with the runtime's own
    client, or with our TaskHub (`settings`) when that client never
    connected: instance -> n, for those whose start was acknowledged."""
    started: dict[str, int] = {}
    client = _client(url, schema, report.connects)
    if client is None:
        report.started_by = "TaskHub (the runtime's client never connected)"
        hub = TaskHub.connect(url, schema, **settings)
        start = hub.start_orchestration
    else:
        hub, start = None, client.start_orchestration
    try:
        for n in range(count):
            instance = f"{schema}-{n}"
            report.started.called()
            try:
                start(instance, PIPELINE, n)
            except Exception as error:
                report.started.failed(error)
                continue
            started[instance] = n
    finally:
        if hub is not None:
            hub.close()
    return started


def _client(url: str, schema: str, tally: Tally) -> Any:
    """The runtime's client on `url`, or None when it never connected within
    CONNECT_FOR_S; each refused connect is an error."""
    deadline = time.monotonic() + CONNECT_FOR_S
    while True:
        tally.called()
        try:
            return duroxide.Client(duroxide.PostgresProvider.connect_with_schema(url, schema))
        except Exception as error:
            tally.failed(error)
            if time.monotonic() > deadline:
                return None
            time.sleep(CONNECT_PAUSE_S)  # the pooler may hand over another server next time


def _problems(log_dir: Path) -> Counter[str]:
    """The runtime's WARN and ERROR lines, without their time, numbers folded."""
    found: Counter[str] = Counter()
    for log in sorted(log_dir.glob("worker-*.log")):
        for raw in log.read_text(errors="replace").splitlines():
            line = ANSI.sub("", raw).strip()
            if RUNTIME_PROBLEM.search(line):
                found[NUMBER.sub("N", LOGGED_AT.sub("", line, count=1))[:LINE_CHARS]] += 1
    return found
