"""Keep a lease alive while the work it covers runs.

The lock timeout then only bounds how long a crashed holder keeps its item,
not how long the work may take. A keeper renews at about a third of the lock
timeout. A transient database error is retried (with back-off) for as long
as the lease still has time left; a lost lease, or one about to run out while
renewals keep failing, cancels the work: its token is cancelled and
`on_lost` is called. The caller must then not ack the work.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from provider.errors import InvalidInput, LockLost, TaskHubError
from provider.logs import fields
from provider.worker.calls import OrchestrationLeaseCalls
from provider.worker.cancellation import CancellationToken

log = logging.getLogger(__name__)

# Clock(): monotonic seconds. Wait(seconds): sleep that long unless stopped;
# True when stopped. Injected only by tests, which drive a keeper with a fake
# clock instead of waiting.
Clock = Callable[[], float]
Wait = Callable[[float], bool]

# Renew(extend_ms, timeout_s): extend the lease; returns its new end (epoch ms).
# timeout_s bounds the wait for a connection, so that a renewal never blocks
# past the moment the keeper has to give up.
Renew = Callable[[int, float], int]


class LeaseKeeper:
    """Renews one lease from a background thread until `stop()`.

    The keeper tracks the lease's end on the local monotonic clock,
    conservatively: a renewal sent at t extends it to t + lock_timeout.
    """

    def __init__(
        self,
        renew: Renew,
        lock_timeout_ms: int,
        *,
        name: str,
        token: CancellationToken | None = None,
        on_lost: Callable[[str], None] | None = None,
        leased_at: float | None = None,
        renew_every_ms: int | None = None,
        safety_margin_ms: int | None = None,
        log_ids: dict[str, object] | None = None,
        clock: Clock = time.monotonic,
        wait: Wait | None = None,
    ) -> None:
        """log_ids: the ids (instance_id, lock_token, ...) this keeper's log
        records carry, so they join the records of the work it protects."""
        if lock_timeout_ms <= 0:
            raise InvalidInput("LeaseKeeper", "lock_timeout_ms must be positive")
        self._renew = renew
        self.lock_timeout_ms = lock_timeout_ms
        self.name = name
        self.log_ids = log_ids or {}
        self.token = token or CancellationToken()
        self._on_lost = on_lost
        self._interval_s = (renew_every_ms or lock_timeout_ms // 3) / 1000
        # Give up this long before the lease would end, so that the work is
        # stopped before someone else can take the item over.
        self._margin_s = (safety_margin_ms or max(lock_timeout_ms // 10, 50)) / 1000
        self._clock = clock
        self._deadline = (leased_at or clock()) + lock_timeout_ms / 1000
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self._thread = threading.Thread(target=self._run, name=f"lease-keeper:{name}", daemon=True)
        self.renewals = 0
        self.transient_errors = 0  # over the keeper's life
        self.lost_reason: str | None = None

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    def start(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def __enter__(self) -> LeaseKeeper:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _remaining_s(self) -> float:
        return self._deadline - self._clock()

    def _run(self) -> None:
        next_renewal = self._clock() + self._interval_s
        failures_in_a_row = 0
        while not self._wait(max(0.0, next_renewal - self._clock())):
            if self._remaining_s() <= self._margin_s:
                self._lose(f"lease ran out before it could be renewed ({self.name})")
                return
            sent = self._clock()
            try:
                self._renew(self.lock_timeout_ms, max(0.01, self._remaining_s() - self._margin_s))
            except LockLost as error:
                self._lose(f"lease lost: {error.message}")
                return
            except TaskHubError as error:
                if not error.retryable:
                    self._lose(f"renewal failed permanently: {error.message}")
                    return
                self.transient_errors += 1
                failures_in_a_row += 1
                # Retry soon, but never later than the margin allows.
                backoff = min(0.05 * 2 ** min(failures_in_a_row, 6), self._interval_s)
                next_renewal = self._clock() + min(
                    backoff, max(0.0, self._remaining_s() - self._margin_s)
                )
                log.warning(
                    "lease renewal failed, retrying: %s",
                    error,
                    extra=fields(
                        "lease.renewal_failed",
                        lease=self.name,
                        **self.log_ids,
                        sqlstate=error.sqlstate,
                        error_class=type(error).__name__,
                        remaining_ms=int(self._remaining_s() * 1000),
                    ),
                )
                continue
            self.renewals += 1
            failures_in_a_row = 0
            self._deadline = sent + self.lock_timeout_ms / 1000
            next_renewal = sent + self._interval_s

    def _lose(self, reason: str) -> None:
        self.lost_reason = reason
        log.warning(
            "cancelling work: %s",
            reason,
            extra=fields("lease.lost", lease=self.name, **self.log_ids),
        )
        self.token.cancel(reason)
        if self._on_lost is not None:
            self._on_lost(reason)


def keep_orchestration_lease(
    hub: OrchestrationLeaseCalls,
    lock_token: str,
    lock_timeout_ms: int,
    *,
    leased_at: float | None = None,
) -> LeaseKeeper:
    """A keeper for an orchestration turn driven from Python (use it as a context manager)."""
    return LeaseKeeper(
        lambda extend_ms, timeout_s: hub.renew_orchestration_item_lock(
            lock_token, extend_ms, timeout_s=timeout_s
        ),
        lock_timeout_ms,
        name=f"orchestration:{lock_token}",
        leased_at=leased_at,
        log_ids={"schema": hub.config.schema, "lock_token": lock_token},
    )
