"""The four faults, each injected by a thread of its own at random intervals
until the run's stop event is set. A fault that cannot be injected right now
(the server is restarting) is skipped; the next one comes at its time."""

from __future__ import annotations

import contextlib
import random
import threading
import time
from abc import ABC, abstractmethod
from typing import Any

import psycopg

from drills.chaos.server import restart_immediately
from drills.chaos.settings import Interval
from drills.chaos.side import Side
from drills.chaos.workers import WorkerPool
from provider.testing.embedded_pg import EmbeddedPostgres

# The tables every turn and activity goes through.
HUB_TABLES = ("history", "instance_locks", "orchestrator_queue", "worker_queue")
LOCK_WAIT_MS = 2_000  # the harness gives up a lock window rather than queue for long


class FaultLoop(threading.Thread, ABC):
    def __init__(self, name: str, every_s: Interval, seed: int, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.fault = name
        self._every_s = every_s
        self._rng = random.Random(f"{seed}:{name}")  # the same schedule on both sides
        self._halt = stop
        self.injected = 0
        self.crash: BaseException | None = None  # re-raised by the runner

    def run(self) -> None:
        try:
            while not self._halt.wait(self._rng.uniform(*self._every_s)):
                with contextlib.suppress(psycopg.Error):  # the server is down or restarting
                    self.injected += self.inject()
        except BaseException as error:
            self.crash = error
        finally:
            self.close()

    @abstractmethod
    def inject(self) -> int:
        """Inject the fault once; how many faults that made."""

    def close(self) -> None:
        """Release what the loop holds (called once it stops)."""


class _WithConnection(FaultLoop):
    """A loop with one harness connection, opened again after the server restarts."""

    autocommit = True

    def __init__(
        self, name: str, every_s: Interval, seed: int, stop: threading.Event, side: Side
    ) -> None:
        super().__init__(name, every_s, seed, stop)
        self._side = side
        self._conn: psycopg.Connection[Any] | None = None

    def connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            self.close()
            self._conn = psycopg.connect(
                self._side.harness_url, autocommit=self.autocommit, connect_timeout=5
            )
        return self._conn

    def inject(self) -> int:
        try:
            return self.inject_with(self.connection())
        except psycopg.Error:
            self.close()
            raise

    @abstractmethod
    def inject_with(self, conn: psycopg.Connection[Any]) -> int: ...

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class BackendTerminator(_WithConnection):
    """pg_terminate_backend on one or two of the runtime's backends, those
    running a statement first (an idle one only costs the pool a reconnect)."""

    def inject_with(self, conn: psycopg.Connection[Any]) -> int:
        rows = conn.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE usename = %s",
            [self._side.role.name],
        ).fetchall()
        busy = [pid for pid, state in rows if state != "idle"]
        candidates = busy or [pid for pid, _ in rows]
        victims = self._rng.sample(candidates, k=min(len(candidates), self._rng.choice((1, 2))))
        terminated = 0
        for pid in victims:
            row = conn.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()
            terminated += bool(row and row[0])
        return terminated


class LockWindows(_WithConnection):
    """ACCESS EXCLUSIVE on one hub table for a little longer than the runtime's
    statement_timeout: runtime statements that start in the window are cancelled."""

    autocommit = False

    def __init__(
        self,
        name: str,
        every_s: Interval,
        seed: int,
        stop: threading.Event,
        side: Side,
        window_s: float,
    ) -> None:
        super().__init__(name, every_s, seed, stop, side)
        self._window_s = window_s

    def inject_with(self, conn: psycopg.Connection[Any]) -> int:
        table = self._rng.choice(HUB_TABLES)
        conn.execute(f"SET LOCAL lock_timeout = {LOCK_WAIT_MS}")
        conn.execute(f'LOCK TABLE "{self._side.schema}".{table} IN ACCESS EXCLUSIVE MODE')
        time.sleep(self._window_s)
        conn.rollback()
        return 1


class WorkerKiller(FaultLoop):
    """SIGKILL one runtime worker process and start a new one."""

    def __init__(
        self, name: str, every_s: Interval, seed: int, stop: threading.Event, pool: WorkerPool
    ) -> None:
        super().__init__(name, every_s, seed, stop)
        self._pool = pool

    def inject(self) -> int:
        self._pool.kill_one(self._rng)
        return 1


class ServerRestarter(FaultLoop):
    """`pg_ctl restart -m immediate` of the cluster both sides share: every
    backend dies at once, without a shutdown checkpoint, and the server goes
    through crash recovery."""

    def __init__(
        self,
        name: str,
        every_s: Interval,
        seed: int,
        stop: threading.Event,
        cluster: EmbeddedPostgres,
    ) -> None:
        super().__init__(name, every_s, seed, stop)
        self._cluster = cluster

    def inject(self) -> int:
        restart_immediately(self._cluster)
        return 1
