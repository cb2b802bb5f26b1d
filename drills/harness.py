"""What every drill does the same way: start, load, judge, report.

* **Start.** `server`: the server the user named, else a cluster of the
  drill's own, stopped at the end however the drill ends; `log_folder`, where
  the drill keeps what its processes logged; `with_application_name`, so the
  server's connections (and the locks and waits of each) can be told apart.
* **Load.** `paced`: starts at a steady rate on a fixed schedule; `DueEvents`:
  each event raised once its instance says it waits for it; `error_line`:
  an error as the application saw it, one line to count.
* **Judge.** `Verdict`: a target, met or not, and what was measured.
* **Report.** `Verdict.line` and `Verdict.met_line` (the drills print their
  verdicts in two wordings, quoted by the docs, so both stay);
  `exit_status`; the patterns of a log line at WARN or above.

What each drill does stays its own: its topology (the failover drill's pair
of servers), its workload, its faults and its targets. The runtime's worker
processes are `drills/chaos/workers.py`'s WorkerPool, which every drill that
runs the released runtime starts.
"""

from __future__ import annotations

import heapq
import json
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from provider.testing.embedded_pg import EmbeddedPostgres
from provider.types import CustomStatus

MESSAGE_CHARS = 160  # of an error the application saw: one kind of error, one line
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # duroxide's tracing colours its level
RUNTIME_PROBLEM = re.compile(r"\b(WARN|ERROR)\b")  # duroxide's levels
PYTHON_PROBLEM = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b")  # the logging module's


# Start


@dataclass(frozen=True)
class Server:
    url: str
    # The drill's own cluster; None: the user's server, which the drill
    # never restarts, reconfigures or stops.
    cluster: EmbeddedPostgres | None


@contextmanager
def server(url: str | None, prepare: Callable[[str], str] | None = None) -> Iterator[Server]:
    """The server at `url`, else a cluster started here (set up by `prepare`,
    which returns the URL the drill uses), removed when the block ends, also
    on an error or Ctrl-C."""
    if url:
        yield Server(url, None)
        return
    cluster = EmbeddedPostgres.create()
    try:
        started = cluster.start()
        yield Server(prepare(started) if prepare else started, cluster)
    finally:
        cluster.stop()


def log_folder(prefix: str) -> Path:
    """A new folder under /tmp for the logs of a drill's processes: kept
    after the drill, for what its report does not say."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def with_application_name(url: str, name: str) -> str:
    """The URL with application_name set (both libpq and duroxide's sqlx read it)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "application_name"]
    query.append(("application_name", name))
    return urlunsplit(parts._replace(query=urlencode(query)))


# Load


def paced(rate_per_s: float, stopping: threading.Event) -> Iterator[int]:
    """1, 2, 3, ... one every 1/rate s until `stopping` is set. The schedule
    is fixed from the first: a slow start is caught up on, not carried over,
    so the rate is what was asked whatever a call cost."""
    interval_s = 1.0 / rate_per_s
    n = 0
    next_at = time.monotonic()
    while not stopping.is_set():
        n += 1
        yield n
        next_at += interval_s
        stopping.wait(max(0.0, next_at - time.monotonic()))


def waits_for_event(status: CustomStatus | None, waiting: str) -> bool:
    """Whether an instance's custom status says it waits: the text the
    workload sets, as the runtime stored it (plain or as JSON)."""
    found = status.status if status is not None else None
    return found in (waiting, json.dumps(waiting))


class DueEvents:
    """Events to raise once their instance waits for them. An event raised
    before its instance subscribed would be lost on the runtime, so each is
    looked at when due, and again `recheck_s` later until it can be raised."""

    def __init__(
        self,
        subscribed: Callable[[str], bool],
        raise_event: Callable[[str], object],
        first_after_s: float,
        recheck_s: float,
    ) -> None:
        self._subscribed = subscribed
        self._raise = raise_event
        self._first_after_s = first_after_s
        self._recheck_s = recheck_s
        self._due: list[tuple[float, str]] = []  # (when, instance): a heap

    def __len__(self) -> int:
        return len(self._due)

    def add(self, instance: str) -> None:
        heapq.heappush(self._due, (time.monotonic() + self._first_after_s, instance))

    def raise_due(self) -> None:
        due: list[str] = []
        while self._due and self._due[0][0] <= time.monotonic():
            due.append(heapq.heappop(self._due)[1])
        for instance in due:
            if self._subscribed(instance):
                self._raise(instance)
            else:
                heapq.heappush(self._due, (time.monotonic() + self._recheck_s, instance))


def error_line(error: BaseException) -> str:
    """`Class: message`, cut: an application counts its errors by this."""
    return f"{type(error).__name__}: {error}"[:MESSAGE_CHARS]


# Judge and report


@dataclass(frozen=True)
class Verdict:
    name: str  # the target
    passed: bool
    detail: str  # what was measured, against what bound

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.name}: {self.detail}"

    def met_line(self) -> str:
        return f"  {'MET    ' if self.passed else 'NOT MET'}  {self.name}: {self.detail}"


def exit_status(verdicts: Iterable[Verdict]) -> int:
    """A drill's exit status: 1 when a target is missed."""
    return 0 if all(verdict.passed for verdict in verdicts) else 1
