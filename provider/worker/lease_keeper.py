"""Keep a lease alive while the work it covers runs.

The lock timeout then only bounds how long a crashed holder keeps its item,
not how long the work may take. A keeper renews at about a third of the lock
timeout. A transient database error is retried (with back-off) for as long
as the lease still has time left; a lost lease, or one about to run out while
renewals keep failing, cancels the work: its token is cancelled and
`on_lost` is called. The caller must then not ack the work.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable

from provider.errors import TaskHubError
from provider.worker.calls import OrchestrationLeaseCalls
from provider.worker.cancellation import CancellationToken
from provider.worker.renewal import RenewalSchedule, log_lost, log_renewal_failure

# Clock(): monotonic seconds. Wait(seconds): sleep that long unless stopped;
# True when stopped. Injected only by tests, which drive a keeper with a fake
# clock instead of waiting.
Clock = Callable[[], float]
Wait = Callable[[float], bool]
# Sleep(seconds): the asyncio keeper's wait (asyncio.sleep unless a test injects one).
Sleep = Callable[[float], Awaitable[None]]

# Renew(extend_ms, timeout_s): extend the lease; returns its new end (epoch ms).
# timeout_s bounds the wait for a connection, so that a renewal never blocks
# past the moment the keeper has to give up.
Renew = Callable[[int, float], int]


class LeaseKeeper:
    """Renews one lease from a background thread until `stop()`
    (the decisions are RenewalSchedule's, see renewal.py)."""

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
        now = clock()
        self.schedule = RenewalSchedule.starting(
            lock_timeout_ms,
            leased_at or now,
            now,
            renew_every_ms=renew_every_ms,
            safety_margin_ms=safety_margin_ms,
        )
        self._renew = renew
        self.lock_timeout_ms = lock_timeout_ms
        self.name = name
        self.log_ids = log_ids or {}
        self.token = token or CancellationToken()
        self._on_lost = on_lost
        self._clock = clock
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait
        self._thread = threading.Thread(target=self._run, name=f"lease-keeper:{name}", daemon=True)
        self.lost_reason: str | None = None

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    @property
    def renewals(self) -> int:
        return self.schedule.renewals

    @property
    def transient_errors(self) -> int:
        """Over the keeper's life."""
        return self.schedule.transient_errors

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

    def _run(self) -> None:
        schedule = self.schedule
        while not self._wait(schedule.wait_s(self._clock())):
            if schedule.too_late(self._clock()):
                self._lose(f"lease ran out before it could be renewed ({self.name})")
                return
            sent = self._clock()
            try:
                self._renew(self.lock_timeout_ms, schedule.call_timeout_s(sent))
            except TaskHubError as error:
                reason = schedule.failed(error, self._clock())
                if reason is not None:
                    self._lose(reason)
                    return
                log_renewal_failure(
                    self.name, self.log_ids, error, schedule.deadline - self._clock()
                )
                continue
            schedule.renewed(sent)

    def _lose(self, reason: str) -> None:
        self.lost_reason = reason
        log_lost(self.name, self.log_ids, reason)
        self.token.cancel(reason)
        if self._on_lost is not None:
            self._on_lost(reason)


# AsyncRenew(extend_ms, timeout_s): LeaseKeeper's Renew, awaited.
AsyncRenew = Callable[[int, float], Awaitable[int]]


class AsyncLeaseKeeper:
    """LeaseKeeper as an asyncio task on the caller's loop: the same schedule,
    the same guarantees (renewal at a third of the lock, transient errors
    retried within the remaining lease, the token cancelled on loss).

        async with AsyncLeaseKeeper(renew, lock_ms, name="...", token=token):
            await work()
    """

    def __init__(
        self,
        renew: AsyncRenew,
        lock_timeout_ms: int,
        *,
        name: str,
        token: CancellationToken | None = None,
        leased_at: float | None = None,
        renew_every_ms: int | None = None,
        safety_margin_ms: int | None = None,
        log_ids: dict[str, object] | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        now = clock()
        self.schedule = RenewalSchedule.starting(
            lock_timeout_ms,
            leased_at or now,
            now,
            renew_every_ms=renew_every_ms,
            safety_margin_ms=safety_margin_ms,
        )
        self._renew = renew
        self._clock = clock
        self._sleep = sleep
        self.lock_timeout_ms = lock_timeout_ms
        self.name = name
        self.log_ids = log_ids or {}
        self.token = token or CancellationToken()
        self._task: asyncio.Task[None] | None = None
        self.lost_reason: str | None = None

    @property
    def lost(self) -> bool:
        return self.lost_reason is not None

    @property
    def renewals(self) -> int:
        return self.schedule.renewals

    @property
    def transient_errors(self) -> int:
        return self.schedule.transient_errors

    async def __aenter__(self) -> AsyncLeaseKeeper:
        self._task = asyncio.create_task(self._run(), name=f"lease-keeper:{self.name}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        schedule = self.schedule
        while True:
            await self._sleep(schedule.wait_s(self._clock()))
            if schedule.too_late(self._clock()):
                self._lose(f"lease ran out before it could be renewed ({self.name})")
                return
            sent = self._clock()
            try:
                await self._renew(self.lock_timeout_ms, schedule.call_timeout_s(sent))
            except TaskHubError as error:
                reason = schedule.failed(error, self._clock())
                if reason is not None:
                    self._lose(reason)
                    return
                log_renewal_failure(
                    self.name, self.log_ids, error, schedule.deadline - self._clock()
                )
                continue
            schedule.renewed(sent)

    def _lose(self, reason: str) -> None:
        self.lost_reason = reason
        log_lost(self.name, self.log_ids, reason)
        self.token.cancel(reason)


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
