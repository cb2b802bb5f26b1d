"""The application: starts orders at a steady rate through our TaskHub on the
libpq multi-host URL, as the docs advise.

Every start is recorded: acknowledged (the call returned; True: it created
the instance, False: an earlier try had) or not. A start that raised
RetryableError is repeated with the same instance id, with back-off, for up
to GIVE_UP_S; a permanent error ends it. Around the call that was
acknowledged, a connection of the thread's own reads the primary's WAL
insert position, before and after: the start's commit lies between the two,
which says after a crash whether the standby can have had it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import psycopg

from drills.failover import workload
from drills.failover.wal import lsn
from drills.harness import error_line, paced
from provider import RetryableError, TaskHub, TaskHubError

APPLICATION_NAME = "failover-app"
THREADS = 16  # starts in flight at once: a failover holds some for seconds
GIVE_UP_S = 60.0
FIRST_PAUSE_S = 0.05
MAX_PAUSE_S = 1.0
PROBE_CONNECT_TIMEOUT_S = 2
MESSAGE_CHARS = 160


@dataclass
class StartRecord:
    instance: str
    asked_at: float  # Unix time of the first call
    attempts: int = 0
    retryable_errors: int = 0
    last_error: str | None = None
    given_up: bool = False
    acknowledged_at: float | None = None
    created: bool | None = None  # as the acknowledged call returned it
    # The primary's WAL insert position before and after the acknowledged
    # call (None: the probe could not read it).
    lsn_before: int | None = None
    lsn_after: int | None = None

    @property
    def acknowledged(self) -> bool:
        return self.acknowledged_at is not None


class Application:
    def __init__(self, url: str, schema: str, prefix: str, rate_per_s: float) -> None:
        self._url = url
        self._hub = TaskHub.connect(
            url, schema, application_name=APPLICATION_NAME, pool_max_size=THREADS
        )
        self._prefix = prefix
        self._rate_per_s = rate_per_s
        self._stopping = threading.Event()
        self._scheduler = threading.Thread(target=self._schedule, name=f"app-{prefix}", daemon=True)
        self._executor = ThreadPoolExecutor(THREADS, thread_name_prefix=f"app-{prefix}")
        self._probes = threading.local()
        self._probe_lock = threading.Lock()
        self._open_probes: list[psycopg.Connection[Any]] = []
        self.records: dict[str, StartRecord] = {}

    def start(self) -> None:
        self._scheduler.start()

    def stop(self) -> None:
        """No more starts; returns once every start was acknowledged or given up."""
        self._stopping.set()
        self._scheduler.join()
        self._executor.shutdown(wait=True)
        self._hub.close()
        for conn in self._open_probes:
            conn.close()

    def _schedule(self) -> None:
        for n in paced(self._rate_per_s, self._stopping):
            record = StartRecord(f"{self._prefix}-{n}", time.time())
            self.records[record.instance] = record
            self._executor.submit(self._start, record)

    def _start(self, record: StartRecord) -> None:
        pause = FIRST_PAUSE_S
        while True:
            record.attempts += 1
            before = self._insert_position()
            try:
                record.created = self._hub.start_orchestration(
                    record.instance, workload.ORDER, record.instance
                )
            except RetryableError as error:
                record.retryable_errors += 1
                record.last_error = f"{error}"[:MESSAGE_CHARS]
                if time.time() - record.asked_at > GIVE_UP_S:
                    record.given_up = True
                    return
                time.sleep(pause)  # back-off before the repeat
                pause = min(pause * 2, MAX_PAUSE_S)
                continue
            except TaskHubError as error:
                record.last_error = error_line(error)
                record.given_up = True
                return
            record.acknowledged_at = time.time()
            record.lsn_before = before
            record.lsn_after = self._insert_position()
            return

    def _insert_position(self) -> int | None:
        """The primary's WAL insert position, on this thread's probe
        connection (made again after an error); None when it cannot say."""
        conn: psycopg.Connection[Any] | None = getattr(self._probes, "conn", None)
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(
                    self._url, autocommit=True, connect_timeout=PROBE_CONNECT_TIMEOUT_S
                )
                self._probes.conn = conn
                with self._probe_lock:
                    self._open_probes.append(conn)
            row = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            return lsn(str(row[0])) if row else None
        except psycopg.Error:
            if conn is not None:
                conn.close()
            return None
