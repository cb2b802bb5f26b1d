"""When to renew a lease, and when to give up on it: the decisions of a lease
keeper without its thread or task, shared by LeaseKeeper (a thread) and
AsyncLeaseKeeper (an asyncio task), and testable with a fake clock.

The lease's end is tracked on the local monotonic clock, conservatively: a
renewal sent at t extends it to t + lock_timeout. Renewal is due every third
of the lock timeout. A transient error is retried with back-off, never later
than the safety margin before the lease's end; a lost lease, a permanent
error, or a lease about to run out ends the keeper.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from provider.backoff import Backoff
from provider.errors import InvalidInput, LockLost, TaskHubError
from provider.logs import fields

# A failed renewal is tried again after 100 ms, 200 ms, ... (at most 3.2 s,
# the renewal interval, and the time the lease has left before its margin).
RENEWAL_BACKOFF = Backoff(first_s=0.1, cap_s=3.2)

log = logging.getLogger("provider.worker.lease_keeper")


@dataclass
class RenewalSchedule:
    lock_timeout_ms: int
    interval_s: float
    # Give up this long before the lease would end, so that the work is
    # stopped before someone else can take the item over.
    margin_s: float
    deadline: float
    next_renewal: float
    failures_in_a_row: int = 0
    renewals: int = 0
    transient_errors: int = 0

    @classmethod
    def starting(
        cls,
        lock_timeout_ms: int,
        leased_at: float,
        now: float,
        *,
        renew_every_ms: int | None = None,
        safety_margin_ms: int | None = None,
    ) -> RenewalSchedule:
        if lock_timeout_ms <= 0:
            raise InvalidInput("LeaseKeeper", "lock_timeout_ms must be positive")
        interval_s = (renew_every_ms or lock_timeout_ms // 3) / 1000
        return cls(
            lock_timeout_ms=lock_timeout_ms,
            interval_s=interval_s,
            margin_s=(safety_margin_ms or max(lock_timeout_ms // 10, 50)) / 1000,
            deadline=leased_at + lock_timeout_ms / 1000,
            next_renewal=now + interval_s,
        )

    def wait_s(self, now: float) -> float:
        """How long until the next renewal is due."""
        return max(0.0, self.next_renewal - now)

    def too_late(self, now: float) -> bool:
        """The lease ends within the margin: renewing now could not save it."""
        return self.deadline - now <= self.margin_s

    def call_timeout_s(self, now: float) -> float:
        """The most a renewal may wait for a connection before it is too late."""
        return max(0.01, self.deadline - now - self.margin_s)

    def renewed(self, sent: float) -> None:
        self.renewals += 1
        self.failures_in_a_row = 0
        self.deadline = sent + self.lock_timeout_ms / 1000
        self.next_renewal = sent + self.interval_s

    def failed(self, error: TaskHubError, now: float) -> str | None:
        """Why the lease is lost, or None when the renewal is to be retried (soon,
        never later than the margin allows)."""
        if isinstance(error, LockLost):
            return f"lease lost: {error.message}"
        if not error.retryable:
            return f"renewal failed permanently: {error.message}"
        self.transient_errors += 1
        self.failures_in_a_row += 1
        pause_s = RENEWAL_BACKOFF.pause_s(self.failures_in_a_row)
        self.next_renewal = now + min(
            pause_s, self.interval_s, max(0.0, self.deadline - now - self.margin_s)
        )
        return None


def log_renewal_failure(
    name: str, log_ids: dict[str, object], error: TaskHubError, remaining_s: float
) -> None:
    log.warning(
        "lease renewal failed, retrying: %s",
        error,
        extra=fields(
            "lease.renewal_failed",
            lease=name,
            **log_ids,
            sqlstate=error.sqlstate,
            error_class=type(error).__name__,
            remaining_ms=int(remaining_s * 1000),
        ),
    )


def log_lost(name: str, log_ids: dict[str, object], reason: str) -> None:
    log.warning("cancelling work: %s", reason, extra=fields("lease.lost", lease=name, **log_ids))
