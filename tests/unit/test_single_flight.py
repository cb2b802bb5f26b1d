"""SingleFlight, behind the metrics server's reads: callers that come while
a run is under way wait for it and share its result (or its error); the next
caller after it starts a new run. Threads and events only: no database."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from devkit.waiting import wait_until
from provider.metrics.single_flight import SingleFlight

CALLERS = 30


class Work:
    """A run that holds until released, counting the runs and how many ran at once."""

    def __init__(self, fails: bool = False) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.runs = self.running = self.most = 0
        self.fails = fails
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            self.runs += 1
            self.running += 1
            self.most = max(self.most, self.running)
            number = self.runs
        self.started.set()
        self.release.wait(10)
        with self._lock:
            self.running -= 1
        if self.fails:
            raise RuntimeError(f"run {number} failed")
        return number


def test_callers_during_a_run_share_it_and_the_next_caller_runs_again() -> None:
    work = Work()
    flight = SingleFlight(work)
    with ThreadPoolExecutor(CALLERS) as pool:
        first = pool.submit(flight.run)
        assert work.started.wait(10)
        others = [pool.submit(flight.run) for _ in range(CALLERS - 1)]
        wait_until(lambda: flight.waiting == CALLERS - 1, message="every caller to wait")
        work.release.set()
        results = [first.result(), *(other.result() for other in others)]
    assert results == [1] * CALLERS
    assert (work.runs, work.most, flight.waiting) == (1, 1, 0)
    assert flight.run() == 2  # the run has ended: a caller now starts another


def test_an_error_reaches_every_caller_of_its_run_and_the_next_run_is_fresh() -> None:
    work = Work(fails=True)
    flight = SingleFlight(work)
    with ThreadPoolExecutor(CALLERS) as pool:
        first = pool.submit(flight.run)
        assert work.started.wait(10)
        others = [pool.submit(flight.run) for _ in range(CALLERS - 1)]
        wait_until(lambda: flight.waiting == CALLERS - 1, message="every caller to wait")
        work.release.set()
        for caller in (first, *others):
            with pytest.raises(RuntimeError, match="run 1 failed"):
                caller.result()
    with pytest.raises(RuntimeError, match="run 2 failed"):
        flight.run()
