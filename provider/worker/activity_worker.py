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
What happens to an item is provider/worker/item_flow.py, and what a slot
does provider/worker/slot_loop.py; this worker performs their steps with
calls, on one thread per slot. On stop() the items running are given back
at once, and an item fetched after it is given back unrun.
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
from typing import Any, Unpack

from provider.errors import TaskHubError
from provider.tracing import TraceContext, activity_outcome, activity_span, recording
from provider.types import JsonObject
from provider.worker.activity_item import ActivityItem
from provider.worker.calls import (
    TraceContextSource,
    WakeupListener,
    WakeupSource,
    WorkerCalls,
    check_hub,
)
from provider.worker.cancellation import WorkCancelled
from provider.worker.core import ActivityContext, Handler, WorkerCore, WorkerOptions
from provider.worker.flows import drive
from provider.worker.item_flow import (
    Abandon,
    Ack,
    InFlight,
    Outcome,
    Pause,
    Step,
    Work,
    given_back_on_stop,
    item_flow,
)
from provider.worker.lease_keeper import LeaseKeeper
from provider.worker.slot_loop import (
    CleanupSessions,
    Fetch,
    LoopStep,
    Process,
    RenewSessions,
    Rest,
    WaitForWork,
    session_heartbeat,
    slot_loop,
)
from provider.worker.slots import SlotBoard, SlotGroup

log = logging.getLogger(__name__)


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
        self._in_flight = InFlight()
        self._wakeups: WakeupListener | None = None
        self._slots: SlotGroup | None = None  # this worker's slots on _wakeups
        self._set_waiting: Callable[[int, bool], None] = _nobody_listens

    # -- life cycle -----------------------------------------------------------

    def start(self) -> ActivityWorker:
        self._stopping.clear()
        self._in_flight.open()
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
        """Stop fetching; give every in-flight item back at once (and any
        fetched from now on); wait for the slots."""
        self._stopping.set()
        if self._slots is not None:
            self._slots.wake_all()
        running = self._in_flight.close()
        for claim in running:
            drive(given_back_on_stop(self, claim), self._steps_of(claim.item))
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

    # -- performing the steps --------------------------------------------------

    def _slot(self) -> None:
        drive(slot_loop(self, self._slots, self._stopping.is_set), self._perform)

    def _session_heartbeat(self) -> None:
        drive(session_heartbeat(self, self._stopping.is_set), self._perform)

    def _perform(self, step: LoopStep) -> Any:
        """How this worker performs the steps of a slot and the heartbeat: by calls."""
        match step:
            case Fetch(lock_timeout_ms, owner_id, session_lock_timeout_ms, tags):
                return self.hub.fetch_work_item(
                    lock_timeout_ms,
                    owner_id=owner_id,
                    session_lock_timeout_ms=session_lock_timeout_ms,
                    tags=tags,
                )
            case Rest(seconds):
                self._stopping.wait(seconds)
            case WaitForWork(slots, ticket, idle_s, announce):
                slots.wait_for_work(ticket, self._set_waiting, idle_s, announce=announce)
            case Process(item):
                self._process(item)
            case RenewSessions(owner_id, extend_ms, idle_timeout_ms):
                self.hub.renew_session_lock([owner_id], extend_ms, idle_timeout_ms)
            case CleanupSessions():
                self.hub.cleanup_orphaned_sessions()
        return None

    def _process(self, item: ActivityItem) -> None:
        drive(item_flow(self, item, self._in_flight), self._steps_of(item))

    def _steps_of(self, item: ActivityItem) -> Callable[[Step], Any]:
        """How this worker performs the steps of an item's flow: by calls."""

        def perform(step: Step) -> Any:
            match step:
                case Ack(completion):
                    self.hub.ack_work_item(item.lock_token, completion)
                case Abandon(delay_ms, ignore_attempt):
                    self.hub.abandon_work_item(
                        item.lock_token, delay_ms=delay_ms, ignore_attempt=ignore_attempt
                    )
                case Pause(seconds):
                    time.sleep(seconds)
                case Work():
                    return self._work(item, step)
            return None

        return perform

    def _work(self, item: ActivityItem, work: Work) -> Outcome:
        """The handler, run while a LeaseKeeper keeps the item's lease."""
        context = work.context
        keeper = LeaseKeeper(
            lambda extend_ms, timeout_s: self.hub.renew_work_item_lock(
                item.lock_token, extend_ms, timeout_s=timeout_s
            ),
            self.lock_timeout_ms,
            name=item.keeper_name,
            token=context.token,
            leased_at=item.fetched_at,
            log_ids=self.item_ids(item),
        )
        try:
            with keeper:  # from here on the lease is kept, the trace's read included
                parent = self._trace_parent(context.instance_id)
                attributes = self._span_attributes(context)
                with activity_span(context.activity_name, parent, attributes) as span:
                    completion = self._run(work.handler, context, work.value, item.body or {})
                    activity_outcome(span, completion)
        finally:
            self.stats.renewals += keeper.renewals
            self.stats.renewal_errors += keeper.transient_errors
        return Outcome(completion, keeper.lost)

    def _trace_parent(self, instance_id: str) -> TraceContext | None:
        """The trace the instance's activities continue, while an SDK records."""
        if not recording() or not isinstance(self.hub, TraceContextSource):
            return None
        known, context = self._trace_parents.known(instance_id)
        if known:
            return context
        try:
            context = self.hub.trace_context(instance_id)
        except TaskHubError as error:
            self._trace_parents.read_failed(instance_id, error)
            return None
        self._trace_parents.remember(instance_id, context)
        return context

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
