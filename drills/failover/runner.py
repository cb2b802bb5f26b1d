"""One failover drill from start to outcomes.

1. A primary and a streaming standby (servers.py), the standby streaming
   through the replication proxy; the runtime proxy in front of the primary.
2. A hub migrated to head; the released runtime's processes through the
   runtime proxy; our worker's process on the libpq multi-host URL.
3. Per event: the application starts orders at the steady rate for
   `seconds` (the event a third of the way in); the old primary is rebuilt
   as the new standby; then the application stops, the work it started
   settles, and the outcome is read on the new primary.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devkit.waiting import wait_until
from drills.chaos.workers import WorkerPool
from drills.failover import defects, workload
from drills.failover.application import Application
from drills.failover.events import NAMES, Topology, run_event
from drills.failover.logs import LogTail, python_tail, runtime_tail
from drills.failover.outcome import EventOutcome, WorkerDelta, read_outcome, settle
from drills.failover.proxy import TcpProxy
from drills.failover.servers import Node, ServerPair
from drills.harness import with_application_name
from provider.deploy import migrate
from provider.testing.embedded_pg import free_port

RUNTIME_APPLICATION = "failover-runtime"
STATS_FRESH_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class DrillSettings:
    rate_per_s: float = 10.0
    seconds: float = 30.0  # of load per event
    events: tuple[str, ...] = NAMES
    lag_s: float = 3.0  # how long the lagging event stalls replication
    drain_s: float = 90.0  # the bound on settling after the load stops
    runtime_workers: int = 2
    defect: str | None = None  # defects.py

    @property
    def before_event_s(self) -> float:
        return self.seconds / 3


@dataclass
class Drill:
    """What the events share: the servers, the proxies, the workers' logs."""

    topology: Topology
    schema: str
    app_url: str
    python_logs: Path
    runtime_logs: Path
    runtime_tail: LogTail
    python_tail: LogTail

    def worker_stats(self, newer_than: float = 0.0) -> dict[str, int]:
        """Our worker's statistics, as written after `newer_than` (Unix time)."""
        path = self.python_logs / "worker-1.ready.stats"
        wait_until(
            lambda: path.exists() and path.stat().st_mtime > newer_than,
            timeout_s=STATS_FRESH_TIMEOUT_S,
            message="our worker to write its statistics",
        )
        stats: dict[str, int] = json.loads(path.read_text())
        return stats

    def executions(self) -> list[Path]:
        return [*self.runtime_logs.glob("*.runs"), *self.python_logs.glob("*.runs")]


def run_drill(
    settings: DrillSettings, log_dir: Path, say: Callable[[str], None]
) -> list[EventOutcome]:
    pair = ServerPair.create()
    replication = TcpProxy("replication-proxy", pair.primary.port).start()
    runtime_proxy = TcpProxy("runtime-proxy", pair.primary.port).start()
    pools: list[WorkerPool] = []
    try:
        first = pair.primary
        pair.build_standby(Node("node-2", pair.base, free_port(), pair.bin_dir), replication.port)
        assert pair.standby is not None
        multi_host = pair.url(first.port, pair.standby.port, read_write=True)
        schema = f"failover_{uuid.uuid4().hex[:8]}"
        migrate.upgrade(pair.node_url(first), schema)
        single_host = settings.defect == defects.SINGLE_HOST_WORKER
        drill = Drill(
            Topology(pair, runtime_proxy, replication),
            schema,
            multi_host,
            log_dir / "python",
            log_dir / "runtime",
            runtime_tail(log_dir / "runtime"),
            python_tail(log_dir / "python"),
        )
        say(
            f"failover drill on PostgreSQL in {pair.bin_dir}: {first.name} (port {first.port})"
            f" primary, {pair.standby.name} (port {pair.standby.port}) its asynchronous standby;"
            f" {settings.rate_per_s:g} orders/s for {settings.seconds:g} s per event;"
            f" logs in {log_dir}" + (f"; DEFECT: {settings.defect}" if settings.defect else "")
        )
        with defects.applied(settings.defect):
            pools = [
                WorkerPool(
                    with_application_name(pair.url(runtime_proxy.port), RUNTIME_APPLICATION),
                    schema,
                    settings.runtime_workers,
                    drill.runtime_logs,
                    module="drills.failover.runtime_worker",
                ),
                WorkerPool(
                    pair.url(first.port) if single_host else multi_host,
                    schema,
                    1,
                    drill.python_logs,
                    module="drills.failover.python_worker",
                ),
            ]
            for pool in pools:
                pool.start()
            return [run_phase(drill, name, settings, say) for name in settings.events]
    finally:
        for pool in pools:
            pool.stop()
        runtime_proxy.stop()
        replication.stop()
        pair.remove()


def run_phase(
    drill: Drill, name: str, settings: DrillSettings, say: Callable[[str], None]
) -> EventOutcome:
    pair = drill.topology.pair
    drill.runtime_tail.skip()
    drill.python_tail.skip()
    before = drill.worker_stats()
    app = Application(drill.app_url, drill.schema, name, settings.rate_per_s)
    began = time.monotonic()
    app.start()
    try:
        # A steady load before the event: time is the subject.
        time.sleep(settings.before_event_s)
        event = run_event(name, drill.topology, settings.lag_s)
        say(
            f"  {name}: {event.old_primary.name} stopped, {event.new_primary.name} promoted"
            f" {event.outage_s:.2f} s later; beyond the standby's"
            f" {event.unreceived.line()}"
        )
        rebuilding = time.monotonic()
        pair.build_standby(event.old_primary, drill.topology.replication_proxy.port)
        say(
            f"  {name}: {event.old_primary.name} rebuilt as the standby in"
            f" {time.monotonic() - rebuilding:.1f} s"
        )
        # The rest of the load after the event.
        time.sleep(max(0.0, settings.seconds - (time.monotonic() - began)))
    finally:
        app.stop()
    settled = settle(pair, drill.schema, name, settings.drain_s)
    after = drill.worker_stats(newer_than=time.time())
    outcome = read_outcome(
        pair, drill.schema, event, app.records, workload.executions(drill.executions())
    )
    outcome.settled = settled
    outcome.worker = WorkerDelta(
        leases_lost=after["lost"] - before["lost"],
        renewals=after["renewals"] - before["renewals"],
        renewal_errors=after["renewal_errors"] - before["renewal_errors"],
    )
    outcome.runtime_problems = drill.runtime_tail.new_problems()
    outcome.worker_problems = drill.python_tail.new_problems()
    return outcome
