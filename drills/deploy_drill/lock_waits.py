"""How long the runtime's and the application's statements waited on a
migration: pg_stat_activity sampled every few milliseconds while a migration
backend (application_name "taskhub-pg migration", migrations/env.py) is
connected. A statement counts from its start until the last sample that
still found it blocked by the migration, plus one sampling interval: an
upper bound of its wait."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from devkit.workloads.measure import Latencies

SAMPLE_S = 0.005
MIGRATION_APPLICATION = "taskhub-pg migration"

# Every backend blocked by a migration's backend, with its statement's start.
BLOCKED = """
WITH migration AS (
    SELECT pid FROM pg_catalog.pg_stat_activity WHERE application_name = %(migration)s
)
SELECT a.pid, a.application_name, a.query_start,
       extract(epoch FROM clock_timestamp() - a.query_start) * 1000
  FROM pg_catalog.pg_stat_activity AS a
 WHERE EXISTS (SELECT 1 FROM migration)
   AND a.wait_event_type = 'Lock'
   AND a.application_name = ANY(%(watched)s)
   AND pg_catalog.pg_blocking_pids(a.pid) && ARRAY(SELECT pid FROM migration)
"""


class LockWaitSampler(threading.Thread):
    def __init__(self, url: str, watched: list[str]) -> None:
        super().__init__(daemon=True, name="lock-wait-sampler")
        self._url = url
        self._watched = watched
        self._stopping = threading.Event()
        # (pid, statement start) -> (application, longest wait seen, ms)
        self._waits: dict[tuple[int, Any], tuple[str, float]] = {}

    def stop(self) -> None:
        self._stopping.set()
        self.join()

    def run(self) -> None:
        with psycopg.connect(self._url, autocommit=True, application_name="drill-sampler") as conn:
            while not self._stopping.is_set():
                rows = conn.execute(
                    BLOCKED, {"migration": MIGRATION_APPLICATION, "watched": self._watched}
                ).fetchall()
                for pid, application, query_start, waited_ms in rows:
                    self._waits[(pid, query_start)] = (application, float(waited_ms))
                time.sleep(SAMPLE_S)

    def waits(self, application: str) -> Latencies:
        """Each blocked statement's wait (upper bound) for one application name."""
        return Latencies(
            [
                waited + SAMPLE_S * 1000
                for name, waited in self._waits.values()
                if name == application
            ]
        )
