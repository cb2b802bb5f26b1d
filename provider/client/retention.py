"""Retention that paces itself: prune_ended batch after batch, each batch sized
to take about `batch_seconds`, a pause between batches, and a wait (then a
stop) while the hub's dispatchers are behind.

The hub's latency is what retention must not hurt. A batch is one transaction
whose deletes take CPU and I/O from the hot path, so a batch is sized by the
time it takes rather than by a count that means 20 ms on one hub and 2 s on
another; the pause hands the server back between batches; and before each
batch the prune asks how long the oldest message a dispatcher could take has
waited (taskhub_dispatch_lag_ms): above `busy_lag_ms` it waits for the hub to
catch up, and after `busy_wait_seconds` of that it stops, keeping what it did.
A stopped prune loses nothing: the next run starts where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from provider.errors import InvalidInput, TaskHubError
from provider.types import PrunedBatch

DEFAULT_PRUNE_BATCH = 500  # roots per batch when batches are not sized by time
MAX_PRUNE_BATCH = 10_000  # the procedure's bound
FIRST_TIMED_BATCH = 50  # a timed prune starts small and grows to its budget
MAX_GROWTH = 2.0  # a batch is at most this many times the one before it
BUSY_POLL_SECONDS = 1.0  # how often a waiting prune asks the hub again
# The lag cannot be asked: a hub before revision 0026, or a role without EXECUTE.
CANNOT_ASK_LAG = {"42883": "predates revision 0026", "42501": "lets this role not ask it"}


@dataclass(frozen=True)
class PrunePacing:
    """How retention shares the server with the hub (docs/ops.md, "Retention").

    batch_seconds: the time each batch should take; 0 sizes every batch at
        `max_batch` roots.
    max_batch: the most roots one batch deletes.
    pause_seconds: the pause after each batch.
    busy_lag_ms: wait while the hub's dispatch lag is above this; 0 (the
        default) never asks.
    busy_wait_seconds: how long to wait for a busy hub before stopping."""

    batch_seconds: float = 0.2
    max_batch: int = DEFAULT_PRUNE_BATCH
    pause_seconds: float = 0.05
    # Off unless asked: one message no dispatcher can take (an orchestration
    # no runtime registers, a version none serves) waits for ever, and with
    # a threshold it would hold retention off for as long.
    busy_lag_ms: int = 0
    busy_wait_seconds: float = 60.0

    def __post_init__(self) -> None:
        checks = (
            ("batch_seconds", self.batch_seconds, 0.0, 60.0),
            ("max_batch", self.max_batch, 1, MAX_PRUNE_BATCH),
            ("pause_seconds", self.pause_seconds, 0.0, 3_600.0),
            ("busy_lag_ms", self.busy_lag_ms, 0, 86_400_000),
            ("busy_wait_seconds", self.busy_wait_seconds, 0.0, 86_400.0),
        )
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidInput("prune", f"{name} must be a number, got {value!r}")
            if not low <= value <= high:
                raise InvalidInput("prune", f"{name} must be between {low} and {high}, got {value}")
        if isinstance(self.max_batch, float):
            raise InvalidInput("prune", f"max_batch must be a whole number, got {self.max_batch}")

    @classmethod
    def fixed(cls, batch_size: int = DEFAULT_PRUNE_BATCH) -> PrunePacing:
        """Batches of `batch_size` roots back to back, never asking the hub."""
        return cls(batch_seconds=0.0, max_batch=batch_size, pause_seconds=0.0, busy_lag_ms=0)


class PacedPrune:
    """Iterate for what each batch deleted. It ends when a batch deletes
    nothing, at `limit` roots, or when the hub stays busy; `stopped_busy`
    then says why, in one line. Where the hub cannot tell its lag, the
    prune runs without the busy check and `busy_check_off` says why."""

    def __init__(
        self,
        prune_ended: Callable[..., PrunedBatch],
        completed_before_ms: int,
        *,
        limit: int | None = None,
        pacing: PrunePacing | None = None,
        dispatch_lag_ms: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.pacing = pacing or PrunePacing()
        self.stopped_busy: str | None = None
        self.busy_check_off: str | None = None
        self._prune_ended, self._before_ms, self._limit = prune_ended, completed_before_ms, limit
        self._lag, self._clock, self._sleep = dispatch_lag_ms, clock, sleep

    def __iter__(self) -> Iterator[PrunedBatch]:
        pacing, deleted = self.pacing, 0
        timed = bool(pacing.batch_seconds)
        size = min(FIRST_TIMED_BATCH, pacing.max_batch) if timed else pacing.max_batch
        while self._limit is None or deleted < self._limit:
            if not self._hub_calm():
                return
            asked = size if self._limit is None else min(size, self._limit - deleted)
            started = self._clock()
            batch = self._prune_ended(self._before_ms, batch_size=asked)
            if batch.roots_deleted == 0:
                return
            deleted += batch.roots_deleted
            yield batch
            if timed:
                size = self._next_size(size, batch.roots_deleted, self._clock() - started)
            if pacing.pause_seconds:
                self._sleep(pacing.pause_seconds)

    def _next_size(self, size: int, roots: int, seconds: float) -> int:
        """The batch that should take batch_seconds at the pace just seen,
        growing at most MAX_GROWTH-fold (one quick batch proves little)."""
        pacing = self.pacing
        if roots < size:  # the backlog ran short: the pace says nothing
            return size
        wanted = roots * pacing.batch_seconds / max(seconds, 1e-3)
        return max(1, min(pacing.max_batch, round(min(wanted, size * MAX_GROWTH))))

    def _hub_calm(self) -> bool:
        """Whether the next batch may run: at once when the hub's dispatch
        lag is within budget, after a wait when it comes back within it."""
        pacing = self.pacing
        if not pacing.busy_lag_ms or self._lag is None or self.busy_check_off:
            return True
        gave_up_at = self._clock() + pacing.busy_wait_seconds
        while (lag := self._asked_lag()) > pacing.busy_lag_ms:
            if self._clock() >= gave_up_at:
                self.stopped_busy = (
                    f"stopped: hub busy (dispatch lag {lag} ms above {pacing.busy_lag_ms} ms"
                    f" for {pacing.busy_wait_seconds:g} s); the next prune goes on from here"
                )
                return False
            self._sleep(min(BUSY_POLL_SECONDS, max(gave_up_at - self._clock(), 0.0)))
        return True

    def _asked_lag(self) -> int:
        """The hub's dispatch lag; 0 (and the check off) where it cannot tell."""
        assert self._lag is not None
        try:
            return self._lag()
        except TaskHubError as error:
            why = CANNOT_ASK_LAG.get(error.sqlstate or "")
            if why is None:
                raise
            self.busy_check_off = f"no busy check: the hub {why} (taskhub_dispatch_lag_ms)"
            return 0
