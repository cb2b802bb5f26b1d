"""The root instances that ended, read every second, so that every end is
seen before retention can delete it (an operator's prune may take what ended
30 s ago; a once-a-minute read would lose half of each minute's ends and
count their instances as stuck).

Each end is filed under the minute its completed_at falls in, with its start
record taken from the application at the moment it is seen.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

import psycopg
from psycopg import sql

from drills.soak.application import Started


class StartRecords(Protocol):
    """Who started the instances and when (the soak's application, the
    capacity bench's starter)."""

    def take_started(self, instances: list[str]) -> dict[str, Started]: ...


POLL_S = 1.0
# A turn's completed_at is its transaction's clock; the commit that makes it
# visible may come later. Each read looks this far behind the newest end seen.
OVERLAP_MS = 15_000.0


@dataclass(frozen=True)
class Ended:
    instance: str
    status: str
    completed_ms: float
    started: Started | None  # None: not started by this soak's application


class Completions:
    def __init__(self, url: str, schema: str, application: StartRecords, minute_s: float) -> None:
        self._conn = psycopg.connect(url, autocommit=True, application_name="soak-completions")
        self._query = sql.SQL(
            "SELECT i.instance_id, e.status, extract(epoch FROM e.completed_at) * 1000"
            "  FROM {0}.executions AS e"
            "  JOIN {0}.instances AS i"
            "    ON i.instance_id = e.instance_id"
            "   AND i.current_execution_id = e.execution_id"
            " WHERE i.parent_instance_id IS NULL"
            "   AND e.status <> 'Running'"
            "   AND e.completed_at >= to_timestamp(%s / 1000.0)"
        ).format(sql.Identifier(schema))
        self._application = application
        self._began_ms = 0.0
        self._minute_ms = minute_s * 1000.0
        self._lock = threading.Lock()
        self._seen: dict[str, float] = {}  # instance -> completed_ms, inside the overlap
        self._newest_ms = 0.0
        self._by_minute: defaultdict[int, list[Ended]] = defaultdict(list)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-completions", daemon=True)
        self.errors = 0

    def start(self, began_epoch_ms: float) -> None:
        self._began_ms = self._newest_ms = began_epoch_ms
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._conn.close()

    def take(self, minute: int) -> list[Ended]:
        """The ends of minute `minute` (1 for the first), read up to now."""
        self.read()
        with self._lock:
            return self._by_minute.pop(minute, [])

    def read(self) -> None:
        with self._lock:
            since = self._newest_ms - OVERLAP_MS
            rows = self._conn.execute(self._query, [since]).fetchall()
            fresh = [(str(i), str(s), float(ms)) for i, s, ms in rows if i not in self._seen]
            started = self._application.take_started([row[0] for row in fresh])
            for instance, status, completed_ms in fresh:
                self._seen[instance] = completed_ms
                self._newest_ms = max(self._newest_ms, completed_ms)
                minute = int((completed_ms - self._began_ms) // self._minute_ms) + 1
                ended = Ended(instance, status, completed_ms, started.get(instance))
                self._by_minute[minute].append(ended)
            horizon = self._newest_ms - 2 * OVERLAP_MS
            self._seen = {i: ms for i, ms in self._seen.items() if ms >= horizon}

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.read()
            except psycopg.Error:
                self.errors += 1
