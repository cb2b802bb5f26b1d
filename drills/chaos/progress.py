"""Is a side still moving? Snapshots of its hub, and a watch that says when
every side has settled: finished, or stopped moving with work left undone."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import psycopg


@dataclass(frozen=True)
class Progress:
    terminal: int  # orchestrations of the workload that ended (Completed or Failed)
    orchestrator_rows: int
    worker_rows: int
    history_rows: int  # every turn adds to it: the best sign of movement

    def finished(self, orchestrations: int) -> bool:
        return self.terminal == orchestrations and self.orchestrator_rows == self.worker_rows == 0


def progress(conn: psycopg.Connection[Any], schema: str, instances: list[str]) -> Progress:
    row = conn.execute(
        f"""
        SELECT (SELECT count(*)
                  FROM "{schema}".instances AS i
                  JOIN "{schema}".executions AS e
                    ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
                 WHERE i.instance_id = ANY(%s) AND e.status IN ('Completed', 'Failed')),
               (SELECT count(*) FROM "{schema}".orchestrator_queue),
               (SELECT count(*) FROM "{schema}".worker_queue),
               (SELECT count(*) FROM "{schema}".history)
        """,
        [instances],
    ).fetchone()
    assert row is not None
    return Progress(*(int(value) for value in row))


Snapshot = Callable[[], Progress | None]  # None: the server did not answer


class SettleWatch:
    """Polled by the runner: `settled()` once each side has finished or has not
    moved for `quiet_s` (longer than a lease, so a killed worker's work has had
    time to come back). A side whose orchestrations can never end thus does
    not hold the run to its deadline."""

    def __init__(
        self, sides: Mapping[str, Snapshot], orchestrations: int, quiet_s: float, since: float
    ) -> None:
        self._sides = sides
        self._orchestrations = orchestrations
        self._quiet_s = quiet_s
        self._since = since
        self.finished_s: dict[str, float] = {}  # side -> seconds from `since`
        self._last: dict[str, tuple[Progress | None, float]] = {}  # snapshot, since when
        self._quiet: set[str] = set()

    def settled(self) -> bool:
        for name, snapshot in self._sides.items():
            if name in self.finished_s or name in self._quiet:
                continue
            current = snapshot()
            now = time.monotonic()
            if current is not None and current.finished(self._orchestrations):
                self.finished_s[name] = now - self._since
                continue
            previous, unchanged_since = self._last.get(name, (None, now))
            if current != previous or current is None:
                self._last[name] = (current, now)
            elif now - unchanged_since >= self._quiet_s:
                self._quiet.add(name)
        return len(self.finished_s) + len(self._quiet) == len(self._sides)

    def wait(self, timeout_s: float, poll_s: float = 0.5) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self.settled():
            time.sleep(poll_s)
