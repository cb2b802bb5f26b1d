"""SingleFlight: at most one run of a piece of work at a time; whoever asks
while it runs waits for that run and shares its result.

The metrics server reads the hub at each scrape and each /healthz. Without
this, a burst of requests while the database is slow (a held lock, say) is a
burst of connections, each waiting: thirty requests, thirty connections.
With it, one connection reads, and the others get what it read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Run(Generic[T]):
    """One run: its result or its error, once `done` is set."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: T | None = None
        self.error: BaseException | None = None

    def outcome(self) -> T:
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]  # set whenever error is not


class SingleFlight(Generic[T]):
    """Runs `work` for the first caller; callers that come while it runs
    wait for it. The work bounds its own time (the collector's timeouts)."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._running: _Run[T] | None = None
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """How many callers wait for the run under way."""
        with self._lock:
            return self._waiting

    def run(self) -> T:
        with self._lock:
            running = self._running
            first = running is None
            if running is None:
                running = self._running = _Run()
            else:
                self._waiting += 1
        if not first:
            try:
                return running.outcome()
            finally:
                with self._lock:
                    self._waiting -= 1
        try:
            result = self._work()
        except BaseException as error:
            running.error = error
            raise
        else:
            running.result = result
            return result
        finally:
            with self._lock:
                self._running = None
            running.done.set()
