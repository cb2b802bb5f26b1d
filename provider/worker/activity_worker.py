"""A worker loop that runs Python activity handlers from the worker queue.

    worker = ActivityWorker(hub, tags=TagFilter.only("python"), concurrency=4)

    @worker.activity("Resize")
    def resize(ctx: ActivityContext, image: dict) -> dict:
        for tile in tiles(image):
            ctx.token.raise_if_cancelled()   # the lease is gone: stop
            ...
        return {"ok": True}

    worker.start(); ...; worker.stop()

Every item runs under a LeaseKeeper, so an activity may run far longer than
the lock timeout; the timeout only decides how fast a crashed worker's items
come back. An item whose lease is lost is cancelled and never acked. An item
fetched more than `max_attempts` times is failed as poison instead of run.
Handlers may be plain functions (cancelled cooperatively through
`ctx.token`) or coroutine functions (cancelled as asyncio tasks).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from provider.config import TaskHubConfig
from provider.errors import InvalidInput, LockLost, TaskHubError
from provider.logs import fields
from provider.shapes import (
    activity_completed,
    activity_failed,
    activity_identity,
    activity_poisoned,
    decode_input,
)
from provider.types import JsonObject, TagFilter, WorkItemLease
from provider.worker.calls import WakeupListener, WakeupSource, WorkerCalls, check_hub
from provider.worker.cancellation import CancellationToken, WorkCancelled
from provider.worker.lease_keeper import LeaseKeeper
from provider.worker.slots import SlotBoard, SlotGroup, Ticket

log = logging.getLogger(__name__)

Handler = Callable[..., Any]
UNREGISTERED_RETRY_MS = 1_000
ACK_ATTEMPTS = 3


def ack_backoff_s(attempt: int) -> float:
    """The pause before ack attempt `attempt + 1` after a transient failure."""
    return 0.05 * 2.0**attempt


@dataclass(frozen=True)
class ActivityContext:
    instance_id: str
    execution_id: int
    activity_id: int
    activity_name: str
    session_id: str | None
    tag: str | None
    attempt: int
    lock_token: str
    token: CancellationToken

    @property
    def is_cancelled(self) -> bool:
        return self.token.cancelled


# A slot that just ran an item and finds the queue empty looks again after
# this long before it tells the server it waits (push wakeups).
BATCH_POLL_S = 0.02


@dataclass
class WorkerStats:
    started: int = 0  # handlers started
    completed: int = 0
    failed: int = 0
    poisoned: int = 0
    lost: int = 0
    given_back: int = 0
    renewals: int = 0
    renewal_errors: int = 0


@dataclass
class _InFlight:
    """One running item; `state` moves running -> acking | given_back, under `lock`."""

    lease: WorkItemLease
    token: CancellationToken
    state: str = "running"
    lock: threading.Lock = field(default_factory=threading.Lock)


def keeper_name(body: JsonObject) -> str:
    """How a work item's lease keeper is named in the logs: instance:activity#id."""
    return f"{body.get('instance')}:{body.get('name')}#{body.get('id')}"


class WorkerOptions(TypedDict, total=False):
    """The settings both workers take (see WorkerCore for the defaults)."""

    concurrency: int
    tags: TagFilter | None
    owner_id: str | None
    lock_timeout_ms: int | None
    session_lock_timeout_ms: int | None
    session_idle_timeout_ms: int
    max_attempts: int
    idle_poll_ms: int
    max_idle_poll_ms: int
    max_error_backoff_ms: int
    push_wakeups: bool


class WorkerCore:
    """What the threaded and the asyncio worker share: settings, handlers,
    statistics, the decisions about an item and the ids of its log records."""

    def __init__(
        self,
        hub_config: TaskHubConfig,
        *,
        concurrency: int = 4,
        tags: TagFilter | None = None,
        owner_id: str | None = None,
        lock_timeout_ms: int | None = None,
        session_lock_timeout_ms: int | None = None,
        session_idle_timeout_ms: int = 300_000,
        max_attempts: int = 10,
        idle_poll_ms: int = 20,
        max_idle_poll_ms: int = 500,
        max_error_backoff_ms: int = 5_000,
        push_wakeups: bool = True,
    ) -> None:
        worker = type(self).__name__  # the refusals name the worker the caller made
        if concurrency < 1 or max_attempts < 1:
            raise InvalidInput(worker, "concurrency and max_attempts must be at least 1")
        if tags is not None and not isinstance(tags, TagFilter):
            raise InvalidInput(
                worker, f"tags must be a TagFilter (TagFilter.only(...)), got {tags!r}"
            )
        self.concurrency = concurrency
        self.tags = tags or TagFilter.default_only()
        self.owner_id = owner_id
        self.lock_timeout_ms = lock_timeout_ms or hub_config.worker_lock_timeout_ms
        self.session_lock_timeout_ms = session_lock_timeout_ms or hub_config.session_lock_timeout_ms
        self.session_idle_timeout_ms = session_idle_timeout_ms
        self.max_attempts = max_attempts
        self.idle_poll_s = idle_poll_ms / 1000
        self.max_idle_poll_s = max_idle_poll_ms / 1000
        self.max_error_backoff_s = max_error_backoff_ms / 1000
        # Idle slots wait for a notification (the poll stays as the safety net).
        self.push_wakeups = push_wakeups
        self.stats = WorkerStats()
        self._schema = hub_config.schema
        self._handlers: dict[str, Handler] = {}

    # -- registration ---------------------------------------------------------

    def register(self, name: str, handler: Handler) -> None:
        """Run `handler` for activity `name`; a name has one handler (a second
        registration is refused, not a silent replacement of the first)."""
        operation = f"{type(self).__name__}.register"
        if not isinstance(name, str) or not name:
            raise InvalidInput(
                operation, f"an activity name must be a non-empty text, got {name!r}"
            )
        if not callable(handler):
            raise InvalidInput(operation, f"the handler of {name!r} is not callable: {handler!r}")
        if name in self._handlers:
            raise InvalidInput(operation, f"activity {name!r} is already registered")
        self._handlers[name] = handler

    def activity(self, name: str) -> Callable[[Handler], Handler]:
        def decorator(handler: Handler) -> Handler:
            self.register(name, handler)
            return handler

        return decorator

    # -- decisions ------------------------------------------------------------

    def _poison_completion(self, lease: WorkItemLease) -> JsonObject | None:
        """The failure to ack instead of running an item fetched too often, or None."""
        if lease.attempt_count <= self.max_attempts:
            return None
        body = activity_identity(lease.work_item)
        log.error(
            "poison: failing activity %s instead of running it (attempt %d of at most %d)",
            body.get("name"),
            lease.attempt_count,
            self.max_attempts,
            extra=self._item_fields("worker.poison", lease),
        )
        return activity_poisoned(body, lease.attempt_count, self.max_attempts)

    def _handler_for(self, lease: WorkItemLease) -> Handler | None:
        name = str(activity_identity(lease.work_item).get("name"))
        handler = self._handlers.get(name)
        if handler is None:
            log.warning(
                "no handler for activity %s; giving it back",
                name,
                extra=self._item_fields("worker.no_handler", lease),
            )
        return handler

    @staticmethod
    def _context(lease: WorkItemLease, token: CancellationToken) -> ActivityContext:
        body = activity_identity(lease.work_item)
        return ActivityContext(
            instance_id=str(body["instance"]),
            execution_id=int(body["execution_id"]),
            activity_id=int(body["id"]),
            activity_name=str(body.get("name")),
            session_id=body.get("session_id"),
            tag=body.get("tag"),
            attempt=lease.attempt_count,
            lock_token=lease.lock_token,
            token=token,
        )

    def _failed(
        self, context: ActivityContext, body: JsonObject, error: Exception
    ) -> JsonObject | None:
        """The completion of a handler that raised (None: it was cancelled)."""
        if context.token.cancelled:
            return None
        log.info(
            "activity %s failed: %s",
            context.activity_name,
            error,
            extra=self._worker_fields(
                "worker.activity_failed",
                instance_id=context.instance_id,
                activity_id=context.activity_id,
                activity=context.activity_name,
                lock_token=context.lock_token,
                attempt_count=context.attempt,
            ),
        )
        return activity_failed(body, f"{type(error).__name__}: {error}")

    def _completed(
        self, context: ActivityContext, body: JsonObject, result: Any
    ) -> JsonObject | None:
        """The completion of a handler that returned (None: it was cancelled).
        A result JSON cannot hold fails the activity, as a handler that raised."""
        if context.token.cancelled:
            return None
        try:
            return activity_completed(body, result)
        except InvalidInput as error:
            return self._failed(context, body, error)

    def _count(self, completion: JsonObject) -> None:
        if "ActivityCompleted" in completion:
            self.stats.completed += 1
        else:
            self.stats.failed += 1

    def _retry_ack(self, lease: WorkItemLease, error: TaskHubError, attempt: int) -> bool:
        """After a failed ack: True to try again, False to give up (logged)."""
        if isinstance(error, LockLost):
            # The same ids as the poison decision, so that a decision and
            # its failed ack read as one event in the logs.
            log.warning(
                "ack refused, lease lost: %s",
                error.message,
                extra=self._item_fields("worker.ack_refused", lease, sqlstate=error.sqlstate),
            )
            self.stats.lost += 1
            return False
        if not error.retryable or attempt == ACK_ATTEMPTS - 1:
            log.error(
                "ack failed: %s",
                error,
                extra=self._item_fields("worker.ack_failed", lease, sqlstate=error.sqlstate),
            )
            return False
        return True

    def _abandon_failed(self, lease: WorkItemLease, error: TaskHubError) -> None:
        log.info(
            "abandon failed (the lease will expire instead): %s",
            error,
            extra=self._item_fields("worker.abandon_failed", lease, sqlstate=error.sqlstate),
        )

    def _fetch_failed(self, error: TaskHubError, retry_in_s: float) -> None:
        # The database is down or refusing: the slot backs off, never spins.
        log.warning(
            "fetch_work_item failed, retrying in %.1f s: %s",
            retry_in_s,
            error,
            extra=self._worker_fields(
                "worker.fetch_failed", sqlstate=error.sqlstate, error_class=type(error).__name__
            ),
        )

    def _heartbeat_failed(self, error: TaskHubError) -> None:
        log.warning(
            "session heartbeat failed, retrying: %s",
            error,
            extra=self._worker_fields("worker.session_heartbeat_failed", sqlstate=error.sqlstate),
        )

    # -- log records ----------------------------------------------------------

    def _item_ids(self, lease: WorkItemLease) -> dict[str, object]:
        """The ids every record about one worker item carries."""
        # Safe on any JSON: the item may be one the worker cannot read.
        work_item: Any = lease.work_item
        body = work_item.get("ActivityExecute") if isinstance(work_item, dict) else None
        body = body if isinstance(body, dict) else {}
        ids = {
            "schema": self._schema,
            "owner_id": self.owner_id,
            "instance_id": body.get("instance"),
            "activity_id": body.get("id"),
            "activity": body.get("name"),
            "lock_token": lease.lock_token,
            "attempt_count": lease.attempt_count,
        }
        return {name: value for name, value in ids.items() if value is not None}

    def _item_fields(self, event: str, lease: WorkItemLease, **more: object) -> dict[str, object]:
        return fields(event, **self._item_ids(lease), **more)

    def _worker_fields(self, event: str, **more: object) -> dict[str, object]:
        return fields(event, schema=self._schema, owner_id=self.owner_id, **more)


def _nobody_listens(pid: int, waiting: bool) -> None:
    """The set_wakeup_waiting of a worker without push wakeups: never called."""


class ActivityWorker(WorkerCore):
    """The threaded worker: one thread per slot; coroutine handlers run in
    their own event loop per call (for loop-bound clients, use AsyncActivityWorker)."""

    def __init__(self, hub: WorkerCalls, **options: Unpack[WorkerOptions]) -> None:
        check_hub("ActivityWorker", hub, asyncio_calls=False)
        super().__init__(hub.config, **options)
        self.hub = hub
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._in_flight: dict[str, _InFlight] = {}
        self._in_flight_lock = threading.Lock()
        self._wakeups: WakeupListener | None = None
        self._slots: SlotGroup | None = None  # this worker's slots on _wakeups
        self._set_waiting: Callable[[int, bool], None] = _nobody_listens

    # -- life cycle -----------------------------------------------------------

    def start(self) -> ActivityWorker:
        self._stopping.clear()
        if self.push_wakeups and isinstance(self.hub, WakeupSource):
            self._wakeups = self.hub.wakeups()
            self._slots = SlotBoard.of(self._wakeups).group()
            self._set_waiting = self.hub.set_wakeup_waiting
        self._threads = [
            threading.Thread(target=self._slot, name=f"activity-slot-{n}", daemon=True)
            for n in range(self.concurrency)
        ]
        if self.owner_id is not None:
            self._threads.append(
                threading.Thread(target=self._session_heartbeat, name="sessions", daemon=True)
            )
        for thread in self._threads:
            thread.start()
        log.info(
            "activity worker started with %d slots",
            self.concurrency,
            extra=self._worker_fields("worker.started"),
        )
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop fetching; give every in-flight item back at once; wait for the slots."""
        self._stopping.set()
        if self._slots is not None:
            self._slots.wake_all()
        with self._in_flight_lock:
            running = list(self._in_flight.values())
        for item in running:
            self._give_back(item, "worker shutting down")
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._wakeups is not None and self._slots is not None:
            self._slots.close()
            self._wakeups.release()
            self._wakeups, self._slots = None, None
        log.info(
            "activity worker stopped; %d in-flight items given back",
            len(running),
            extra=self._worker_fields("worker.stopped"),
        )

    def __enter__(self) -> ActivityWorker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- the loop -------------------------------------------------------------

    def _slot(self) -> None:
        idle_s, error_s = self.idle_poll_s, 0.1
        waited = False  # this fetch follows a wait: found work may be a wakeup's
        worked = False  # the slot's last fetch leased an item
        while not self._stopping.is_set():
            ticket = self._slots.ticket() if self._slots else None
            fetched_at = time.monotonic()
            try:
                lease = self._fetch()
                if lease is None:
                    # Right after an item, poll once, briefly, before telling the
                    # server: work that trickles in is fetched in batches, not
                    # notified one item at a time.
                    if worked:
                        self._wait_for_work(ticket, BATCH_POLL_S, announce=False)
                    else:
                        self._wait_for_work(ticket, idle_s, announce=True)
                    waited, worked = True, False
            except TaskHubError as error:
                self._fetch_failed(error, error_s)
                self._stopping.wait(error_s)
                error_s = min(error_s * 2, self.max_error_backoff_s)
                continue
            error_s = 0.1
            if lease is None:
                idle_s = min(idle_s * 2, self.max_idle_poll_s)
                continue
            idle_s = self.idle_poll_s
            if self._slots is not None and waited:
                # Woken, and there was work: there may be more, bring in the next
                # slot. A slot going from item to item does not: it would only
                # wake others to find nothing.
                self._slots.found_work()
            waited, worked = False, True
            try:
                self._process(lease, fetched_at)
            except Exception:
                # An item this worker cannot even read (written behind the
                # provider's back): leave it; its lease expires and the fetch
                # path moves it to dead_letters. The slot keeps serving.
                log.exception(
                    "cannot process worker item",
                    extra=self._item_fields("worker.item_unreadable", lease),
                )

    def _fetch(self) -> WorkItemLease | None:
        return self.hub.fetch_work_item(
            self.lock_timeout_ms,
            owner_id=self.owner_id,
            session_lock_timeout_ms=self.session_lock_timeout_ms,
            tags=self.tags,
        )

    def _wait_for_work(self, ticket: Ticket | None, idle_s: float, announce: bool) -> None:
        """Nothing to do: wait for a wakeup, or poll after idle_s."""
        if self._slots is None or ticket is None:
            self._stopping.wait(idle_s)
        else:
            self._slots.wait_for_work(ticket, self._set_waiting, idle_s, announce=announce)

    def _process(self, lease: WorkItemLease, fetched_at: float) -> None:
        poisoned = self._poison_completion(lease)
        if poisoned is not None:
            self._ack(lease, poisoned)
            self.stats.poisoned += 1
            return
        handler = self._handler_for(lease)
        if handler is None:
            self._abandon(lease, delay_ms=UNREGISTERED_RETRY_MS, ignore_attempt=False)
            return

        body = activity_identity(lease.work_item)
        self.stats.started += 1
        item = _InFlight(lease, CancellationToken())
        with self._in_flight_lock:
            self._in_flight[lease.lock_token] = item
        keeper = LeaseKeeper(
            lambda extend_ms, timeout_s: self.hub.renew_work_item_lock(
                lease.lock_token, extend_ms, timeout_s=timeout_s
            ),
            self.lock_timeout_ms,
            name=keeper_name(body),
            token=item.token,
            leased_at=fetched_at,
            log_ids=self._item_ids(lease),
        )
        context = self._context(lease, item.token)
        try:
            with keeper:
                completion = self._run(handler, context, decode_input(body), body)
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(lease.lock_token, None)
            self.stats.renewals += keeper.renewals
            self.stats.renewal_errors += keeper.transient_errors

        with item.lock:
            if item.state == "given_back":
                return
            if keeper.lost or completion is None:
                # Lease gone: another worker owns the item now. Ack nothing.
                self.stats.lost += 1
                return
            item.state = "acking"
        if self._ack(lease, completion):
            self._count(completion)

    def _run(
        self, handler: Handler, context: ActivityContext, value: Any, body: JsonObject
    ) -> JsonObject | None:
        """The completion to ack, or None when the work was cancelled."""
        try:
            if inspect.iscoroutinefunction(handler):
                result = asyncio.run(self._run_async(handler, context, value))
            else:
                result = handler(context, value)
        except (WorkCancelled, asyncio.CancelledError):
            return None
        except Exception as error:
            return self._failed(context, body, error)
        return self._completed(context, body, result)

    @staticmethod
    async def _run_async(handler: Handler, context: ActivityContext, value: Any) -> Any:
        task = asyncio.ensure_future(handler(context, value))
        loop = asyncio.get_running_loop()

        def cancel_task() -> None:
            loop.call_soon_threadsafe(task.cancel)

        context.token.add_callback(cancel_task)
        try:
            return await task
        finally:
            context.token.remove_callback(cancel_task)

    # -- acks -----------------------------------------------------------------

    def _ack(self, lease: WorkItemLease, completion: JsonObject) -> bool:
        for attempt in range(ACK_ATTEMPTS):
            try:
                self.hub.ack_work_item(lease.lock_token, completion)
                return True
            except TaskHubError as error:
                if not self._retry_ack(lease, error, attempt):
                    return False
                time.sleep(ack_backoff_s(attempt))
        return False

    def _abandon(self, lease: WorkItemLease, *, delay_ms: int | None, ignore_attempt: bool) -> None:
        try:
            self.hub.abandon_work_item(
                lease.lock_token, delay_ms=delay_ms, ignore_attempt=ignore_attempt
            )
        except TaskHubError as error:
            self._abandon_failed(lease, error)

    def _give_back(self, item: _InFlight, reason: str) -> None:
        with item.lock:
            if item.state != "running":
                return
            item.state = "given_back"
        item.token.cancel(reason)
        # It was not this item's fault: the fetch does not count as an attempt.
        self._abandon(item.lease, delay_ms=None, ignore_attempt=True)
        self.stats.given_back += 1

    # -- sessions -------------------------------------------------------------

    def _session_heartbeat(self) -> None:
        assert self.owner_id is not None
        interval_s = self.session_lock_timeout_ms / 3000
        last_cleanup = time.monotonic()
        while not self._stopping.wait(interval_s):
            try:
                self.hub.renew_session_lock(
                    [self.owner_id], self.session_lock_timeout_ms, self.session_idle_timeout_ms
                )
                if time.monotonic() - last_cleanup > 60:
                    self.hub.cleanup_orphaned_sessions()
                    last_cleanup = time.monotonic()
            except TaskHubError as error:
                self._heartbeat_failed(error)
