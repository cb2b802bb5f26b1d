"""Where the server's time goes, minute by minute: every 100 ms the server's
activity (what each busy backend waits on, the longest lock wait, the
longest call, which tables autovacuum is working on) and every second the CPU
each backend used (from /proc, when the server runs on this machine).

Backends are told apart by who they serve: the hot path (the application,
the runtime's and the Python worker's connections), retention (the prune's
connection), autovacuum, and the rest of the server.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import psycopg

SAMPLE_S = 0.1
CPU_EVERY = 10  # samples: CPU is read once a second
HOT_PATH = "hot path"
RETENTION = "retention"
AUTOVACUUM = "autovacuum"
SERVER = "server"
CPU_ROLES = (HOT_PATH, RETENTION, AUTOVACUUM, SERVER)
_AUTOVACUUM_TABLE = re.compile(r"autovacuum: (?:VACUUM|ANALYZE|VACUUM ANALYZE) (\S+)")
_TICKS = os.sysconf("SC_CLK_TCK")
# pid, application_name, backend_type, state, wait, query, running ms, lock wait ms
Row = tuple[int, str, str, str, str, str, float, float]


@dataclass
class MinuteWatch:
    samples: int = 0
    # What the hot path's busy backends were doing, sampled: "CPU" when they
    # waited on nothing, else "Lock:transactionid", "LWLock:WALWrite", ...
    hot_path: Counter[str] = field(default_factory=Counter)
    longest_lock_wait_ms: float = 0.0
    longest_call_ms: float = 0.0  # a hot-path statement running, the longest seen
    autovacuum_tables: Counter[str] = field(default_factory=Counter)  # table -> samples
    # role -> CPU seconds of the server's backends serving it
    cpu_s: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    cpu_known: bool = False  # False: the server is not on this machine

    @property
    def autovacuum_s(self) -> float:
        return sum(self.autovacuum_tables.values()) * SAMPLE_S

    def top_wait(self) -> str:
        """The hot path's most sampled wait, with its share of busy samples."""
        busy = sum(self.hot_path.values())
        waits = [(n, name) for name, n in self.hot_path.items() if name != "CPU"]
        if not busy or not waits:
            return "-"
        n, name = max(waits)
        return f"{name.split(':', 1)[1]} {100 * n / busy:.0f}%"

    def cpu_percent(self, role: str, seconds: float) -> float:
        return 100.0 * self.cpu_s[role] / seconds


class Watch:
    def __init__(self, url: str, hot_path_apps: set[str], retention_app: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True, application_name="soak-watch")
        self._hot_path = hot_path_apps
        self._retention = retention_app
        self._by_minute: defaultdict[int, MinuteWatch] = defaultdict(MinuteWatch)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-watch", daemon=True)
        self._cpu_ticks: dict[int, int] = {}
        self._local = _is_local_server(int(self._conn.info.backend_pid))
        self._began = 0.0
        self._minute_s = 60.0
        self.errors = 0

    def start(self, began: float, minute_s: float) -> None:
        self._began, self._minute_s = began, minute_s
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._conn.close()

    def take(self, minute: int) -> MinuteWatch:
        with self._lock:
            return self._by_minute.pop(minute, MinuteWatch(cpu_known=self._local))

    def _loop(self) -> None:
        n = 0
        while not self._stop.wait(SAMPLE_S):
            minute = int((time.monotonic() - self._began) // self._minute_s) + 1
            try:
                rows = self._activity()
                with self._lock:
                    watch = self._by_minute[minute]
                    self._note(watch, rows)
                    if self._local and n % CPU_EVERY == 0:
                        self._note_cpu(watch, rows)
            except psycopg.Error:
                self.errors += 1
            n += 1

    def _activity(self) -> list[Row]:
        """Every backend of this database but ours: pid, whom it serves,
        state, wait, query, how long its statement and its lock wait ran."""
        rows = self._conn.execute(
            "SELECT a.pid, coalesce(a.application_name, ''), a.backend_type,"
            "       coalesce(a.state, ''),"
            "       coalesce(a.wait_event_type || ':' || a.wait_event, 'CPU'),"
            "       left(coalesce(a.query, ''), 200),"
            "       coalesce(extract(epoch FROM clock_timestamp() - a.query_start), 0) * 1000,"
            "       coalesce((SELECT max(extract(epoch FROM clock_timestamp() - l.waitstart))"
            "                   FROM pg_locks AS l"
            "                  WHERE l.pid = a.pid AND NOT l.granted), 0) * 1000"
            "  FROM pg_stat_activity AS a"
            " WHERE a.pid <> pg_backend_pid()"
            "   AND (a.datname = current_database() OR a.datname IS NULL)"
        ).fetchall()
        return cast(list[Row], rows)

    def _role(self, app: str, backend_type: str) -> str:
        if app in self._hot_path:
            return HOT_PATH
        if app == self._retention:
            return RETENTION
        if backend_type == "autovacuum worker":
            return AUTOVACUUM
        return SERVER

    def _note(self, watch: MinuteWatch, rows: list[Row]) -> None:
        watch.samples += 1
        watch.cpu_known = self._local
        for _pid, app, backend_type, state, wait, query, running_ms, lock_wait_ms in rows:
            role = self._role(app, backend_type)
            if role == AUTOVACUUM and (found := _AUTOVACUUM_TABLE.search(query)):
                watch.autovacuum_tables[found[1].split(".")[-1]] += 1
            if role != HOT_PATH or state != "active":
                continue
            watch.hot_path[wait] += 1
            watch.longest_call_ms = max(watch.longest_call_ms, float(running_ms))
            watch.longest_lock_wait_ms = max(watch.longest_lock_wait_ms, float(lock_wait_ms))

    def _note_cpu(self, watch: MinuteWatch, rows: list[Row]) -> None:
        for pid, app, backend_type, *_ in rows:
            ticks = _cpu_ticks(int(pid))
            if ticks is None:
                continue
            before = self._cpu_ticks.get(int(pid), 0)
            self._cpu_ticks[int(pid)] = ticks
            watch.cpu_s[self._role(app, backend_type)] += (ticks - before) / _TICKS


def _cpu_ticks(pid: int) -> int | None:
    """utime + stime of a process, in clock ticks; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _is_local_server(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() in ("postgres", "postmaster")
    except OSError:
        return False
