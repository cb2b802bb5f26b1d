"""The asyncio worker: activity handlers on the caller's own event loop.

    worker = AsyncActivityWorker(hub, tags=TagFilter.only("python"), concurrency=8)

    @worker.activity("Summarise")
    async def summarise(ctx: ActivityContext, text: str) -> str:
        return await llm.complete(text)     # a client created at start-up, on this loop

    async with worker:                      # or: await worker.run() until worker.stop()
        ...

Coroutine handlers run as tasks on the loop that runs the worker, so clients
bound to that loop (asyncio.Queue, an AsyncConnection or an httpx client opened
at start-up) work inside them. Plain functions run in a thread pool of
`concurrency` threads and are cancelled cooperatively through `ctx.token`.
Each item's lease is kept alive by an AsyncLeaseKeeper task, with the
guarantees of the threaded worker: renewal at a third of the lock, transient
errors retried within the remaining lease, cancellation when the lease is
lost (never an ack then), and a shutdown that gives in-flight items back
(and any fetched after it, unrun). What happens to an item is
provider/worker/item_flow.py, and what a slot does
provider/worker/slot_loop.py; this worker performs their steps with awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Unpack

from provider.errors import TaskHubError
from provider.tracing import TraceContext, activity_outcome, activity_span, recording
from provider.types import JsonObject
from provider.worker.activity_item import ActivityItem
from provider.worker.calls import (
    AsyncTraceContextSource,
    AsyncWakeupSource,
    AsyncWorkerCalls,
    WakeupListener,
    check_hub,
)
from provider.worker.cancellation import WorkCancelled
from provider.worker.core import ActivityContext, Handler, WorkerCore, WorkerOptions
from provider.worker.flows import drive_async
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
from provider.worker.lease_keeper import AsyncLeaseKeeper
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

log = logging.getLogger("provider.worker.activity_worker")


async def _nobody_listens(pid: int, waiting: bool) -> None:
    """The set_wakeup_waiting of a worker without push wakeups: never called."""


class AsyncActivityWorker(WorkerCore):
    def __init__(self, hub: AsyncWorkerCalls, **options: Unpack[WorkerOptions]) -> None:
        check_hub("AsyncActivityWorker", hub, asyncio_calls=True)
        super().__init__(hub.config, **options)
        self.hub = hub
        self._stopping = asyncio.Event()
        self._in_flight = InFlight()
        self._threads = ThreadPoolExecutor(self.concurrency, thread_name_prefix="activity")
        self._task: asyncio.Task[None] | None = None
        self._wakeups: WakeupListener | None = None
        self._slots: SlotGroup | None = None  # this worker's slots on _wakeups
        self._set_waiting: Callable[[int, bool], Awaitable[None]] = _nobody_listens

    # -- life cycle -----------------------------------------------------------

    async def run(self) -> None:
        """Serve until stop(): `concurrency` slots and the session heartbeat.
        A stop() made before this task first ran ends it at once (an `async
        with` body that never awaits); once it has ended, run() serves again."""
        log.info(
            "async activity worker started with %d slots",
            self.concurrency,
            extra=self._worker_fields("worker.started"),
        )
        if self.push_wakeups and isinstance(self.hub, AsyncWakeupSource):
            self._wakeups = self.hub.wakeups()
            self._slots = SlotBoard.of(self._wakeups).group()
            self._set_waiting = self.hub.set_wakeup_waiting
        try:
            async with asyncio.TaskGroup() as group:
                for n in range(self.concurrency):
                    group.create_task(self._slot(), name=f"activity-slot-{n}")
                if self.owner_id is not None:
                    group.create_task(self._session_heartbeat(), name="sessions")
        finally:
            self._stopping.clear()  # this run's stop is spent: the next run() serves
            self._in_flight.open()
            self._threads.shutdown(wait=False, cancel_futures=True)
            if self._wakeups is not None and self._slots is not None:
                self._slots.close()
                # The last user joins the listening thread: not on this loop.
                await asyncio.to_thread(self._wakeups.release)
                self._wakeups, self._slots = None, None

    async def stop(self) -> None:
        """Stop fetching; give every in-flight item back at once (and any
        fetched from now on)."""
        self._stopping.set()
        if self._slots is not None:
            self._slots.wake_all()
        running = self._in_flight.close()
        for claim in running:
            await drive_async(given_back_on_stop(self, claim), self._steps_of(claim.item))
        log.info(
            "async activity worker stopped; %d in-flight items given back",
            len(running),
            extra=self._worker_fields("worker.stopped"),
        )

    async def __aenter__(self) -> AsyncActivityWorker:
        self._task = asyncio.create_task(self.run(), name="async-activity-worker")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
        if self._task is not None:
            await self._task

    # -- performing the steps --------------------------------------------------

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once on stop()."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _slot(self) -> None:
        await drive_async(slot_loop(self, self._slots, self._stopping.is_set), self._perform)

    async def _session_heartbeat(self) -> None:
        await drive_async(session_heartbeat(self, self._stopping.is_set), self._perform)

    async def _perform(self, step: LoopStep) -> Any:
        """How this worker performs the steps of a slot and the heartbeat: by awaits."""
        match step:
            case Fetch(lock_timeout_ms, owner_id, session_lock_timeout_ms, tags):
                return await self.hub.fetch_work_item(
                    lock_timeout_ms,
                    owner_id=owner_id,
                    session_lock_timeout_ms=session_lock_timeout_ms,
                    tags=tags,
                )
            case Rest(seconds):
                await self._pause(seconds)
            case WaitForWork(slots, ticket, idle_s, announce):
                await slots.wait_for_work_async(
                    ticket, self._set_waiting, idle_s, announce=announce
                )
            case Process(item):
                await self._process(item)
            case RenewSessions(owner_id, extend_ms, idle_timeout_ms):
                await self.hub.renew_session_lock([owner_id], extend_ms, idle_timeout_ms)
            case CleanupSessions():
                await self.hub.cleanup_orphaned_sessions()
        return None

    async def _process(self, item: ActivityItem) -> None:
        await drive_async(item_flow(self, item, self._in_flight), self._steps_of(item))

    def _steps_of(self, item: ActivityItem) -> Callable[[Step], Awaitable[Any]]:
        """How this worker performs the steps of an item's flow: by awaits."""

        async def perform(step: Step) -> Any:
            match step:
                case Ack(completion):
                    await self.hub.ack_work_item(item.lock_token, completion)
                case Abandon(delay_ms, ignore_attempt):
                    await self.hub.abandon_work_item(
                        item.lock_token, delay_ms=delay_ms, ignore_attempt=ignore_attempt
                    )
                case Pause(seconds):
                    await asyncio.sleep(seconds)
                case Work():
                    return await self._work(item, step)
            return None

        return perform

    async def _work(self, item: ActivityItem, work: Work) -> Outcome:
        """The handler, run while an AsyncLeaseKeeper keeps the item's lease."""
        context = work.context
        keeper = AsyncLeaseKeeper(
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
            async with keeper:  # from here on the lease is kept, the trace's read included
                parent = await self._trace_parent(context.instance_id)
                attributes = self._span_attributes(context)
                with activity_span(context.activity_name, parent, attributes) as span:
                    completion = await self._run(work.handler, context, work.value, item.body or {})
                    activity_outcome(span, completion)
        finally:
            self.stats.renewals += keeper.renewals
            self.stats.renewal_errors += keeper.transient_errors
        return Outcome(completion, keeper.lost)

    async def _trace_parent(self, instance_id: str) -> TraceContext | None:
        """The trace the instance's activities continue, while an SDK records."""
        if not recording() or not isinstance(self.hub, AsyncTraceContextSource):
            return None
        known, context = self._trace_parents.known(instance_id)
        if known:
            return context
        try:
            context = await self.hub.trace_context(instance_id)
        except TaskHubError as error:
            self._trace_parents.read_failed(instance_id, error)
            return None
        self._trace_parents.remember(instance_id, context)
        return context

    async def _run(
        self, handler: Handler, context: ActivityContext, value: Any, body: JsonObject
    ) -> JsonObject | None:
        """The completion to ack, or None when the work was cancelled."""
        try:
            if inspect.iscoroutinefunction(handler):
                result = await self._on_this_loop(handler, context, value)
            else:
                loop = asyncio.get_running_loop()
                # In this task's context: the handler's spans are the activity's.
                call = functools.partial(contextvars.copy_context().run, handler, context, value)
                result = await loop.run_in_executor(self._threads, call)
        except WorkCancelled:
            return None
        except asyncio.CancelledError:
            if not context.token.cancelled:
                raise  # the worker itself is being cancelled, not this item
            return None
        except Exception as error:
            return self._failed(context, body, error)
        return self._completed(context, body, result)

    @staticmethod
    async def _on_this_loop(handler: Handler, context: ActivityContext, value: Any) -> Any:
        """The handler as a task of this loop, cancelled when its token is."""
        task = asyncio.ensure_future(handler(context, value))
        loop = asyncio.get_running_loop()

        def cancel_task() -> None:
            loop.call_soon_threadsafe(task.cancel)

        context.token.add_callback(cancel_task)
        try:
            return await task
        finally:
            context.token.remove_callback(cancel_task)
