"""AsyncActivityWorker against a recording fake of AsyncWorkerCalls, each
test one `asyncio.run`: coroutine handlers on the worker's own loop and
plain ones in its threads, results and errors acked as completions, an
unregistered activity given back later, poison failed unrun, a lost lease
cancelling the handler's task with nothing acked, shutdown giving running
items back (uncounted), the session heartbeat, and a fetch error that does
not stop a slot. No database; waits are on conditions."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Unpack

import pytest

from devkit.waiting import wait_until_async
from provider import ActivityContext, AsyncActivityWorker, LockLost, RetryableError
from provider.worker.core import UNREGISTERED_RETRY_MS, WorkerOptions
from tests.unit.fakes import (
    Abandon,
    AsyncRecordingHub,
    SessionRenewal,
    failure_details,
    result_of,
)

Body = Callable[[AsyncActivityWorker], Awaitable[None]]


def serve(
    hub: AsyncRecordingHub,
    handlers: dict[str, Any],
    until: Callable[[AsyncActivityWorker], bool],
    *,
    before_stop: Body | None = None,
    **options: Unpack[WorkerOptions],
) -> AsyncActivityWorker:
    """Run a worker of one slot (polling every millisecond) until `until`
    holds, then (after `before_stop`) leave its `async with`: stop()."""
    settings: WorkerOptions = {"concurrency": 1, "idle_poll_ms": 1, "max_idle_poll_ms": 5}
    settings.update(options)

    async def main() -> AsyncActivityWorker:
        worker = AsyncActivityWorker(hub, **settings)
        for name, handler in handlers.items():
            worker.register(name, handler)
        async with worker:
            await wait_until_async(lambda: until(worker), timeout_s=5, interval_s=0.001)
            if before_stop is not None:
                await before_stop(worker)
        return worker

    return asyncio.run(main())


def test_a_coroutine_handler_runs_on_the_workers_loop_and_its_result_is_acked() -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Double", 21, activity_id=1)
    loops: list[asyncio.AbstractEventLoop] = []
    worker_loop: list[asyncio.AbstractEventLoop] = []

    async def double(ctx: ActivityContext, value: int) -> int:
        loops.append(asyncio.get_running_loop())
        return value * 2

    async def note_loop(worker: AsyncActivityWorker) -> None:
        worker_loop.append(asyncio.get_running_loop())

    worker = serve(
        hub, {"Double": double}, lambda w: token in hub.fake.acked, before_stop=note_loop
    )
    assert result_of(hub.fake.acked[token]) == 42
    assert loops == worker_loop  # loop-bound clients work inside the handler
    assert (worker.stats.started, worker.stats.completed) == (1, 1)


def test_a_plain_handler_runs_in_a_thread_of_the_worker_not_on_its_loop() -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Where", None, activity_id=1)
    threads: list[str] = []

    def where(ctx: ActivityContext, value: None) -> str:
        threads.append(threading.current_thread().name)
        return "done"

    serve(hub, {"Where": where}, lambda w: token in hub.fake.acked)
    assert result_of(hub.fake.acked[token]) == "done"
    assert threads and threads[0].startswith("activity") and threads[0] != "MainThread"


def test_a_coroutine_that_raises_fails_its_activity_for_good() -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Explode", None, activity_id=1)

    async def explode(ctx: ActivityContext, value: None) -> None:
        raise ValueError("bad image")

    worker = serve(hub, {"Explode": explode}, lambda w: token in hub.fake.acked)
    assert failure_details(hub.fake.acked[token]) == {
        "kind": "ActivityFailed",
        "message": "ValueError: bad image",
        "retryable": False,
    }
    assert worker.stats.failed == 1


def test_an_unregistered_activity_is_given_back_later_and_counts_as_an_attempt() -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Unknown", None, activity_id=1)
    serve(hub, {}, lambda w: bool(hub.fake.abandons))
    assert hub.fake.abandons == [Abandon(token, UNREGISTERED_RETRY_MS, ignore_attempt=False)]
    assert hub.fake.acked == {}


def test_an_item_fetched_too_often_is_failed_as_poison_unrun() -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Run", None, activity_id=1, attempt=3)
    ran: list[int] = []

    def run(ctx: ActivityContext, value: None) -> None:
        ran.append(ctx.activity_id)

    worker = serve(hub, {"Run": run}, lambda w: token in hub.fake.acked, max_attempts=2)
    completion = hub.fake.acked[token]
    assert ran == [] and completion is not None
    assert completion["ActivityFailed"]["details"]["Poison"]["max_attempts"] == 2
    assert worker.stats.poisoned == 1


def test_a_lease_lost_during_the_work_cancels_its_task_and_nothing_is_acked() -> None:
    hub = AsyncRecordingHub()
    hub.fake.renew_errors.append(LockLost("renew_work_item_lock", "taken over", "TH001"))
    token = hub.fake.add("Long", None, activity_id=1)
    cancelled: list[bool] = []

    async def long(ctx: ActivityContext, value: None) -> None:
        try:
            await asyncio.Event().wait()  # until cancelled
        except asyncio.CancelledError:
            cancelled.append(ctx.is_cancelled)
            raise

    # A 150 ms lock is renewed after 50 ms: that renewal finds the lease gone.
    worker = serve(hub, {"Long": long}, lambda w: w.stats.lost == 1, lock_timeout_ms=150)
    assert hub.fake.renewals == [token] and cancelled == [True]
    assert hub.fake.ack_attempts == [] and hub.fake.abandons == []
    assert worker.stats.given_back == 0


@pytest.mark.parametrize("face", ["coroutine", "plain"])
def test_stop_gives_a_running_item_back_without_counting_the_attempt(face: str) -> None:
    hub = AsyncRecordingHub()
    token = hub.fake.add("Long", None, activity_id=1)
    started = threading.Event()
    reasons: list[str | None] = []

    async def long_coroutine(ctx: ActivityContext, value: None) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            reasons.append(ctx.token.reason)

    def long_plain(ctx: ActivityContext, value: None) -> str:
        started.set()
        ctx.token.wait(5)
        reasons.append(ctx.token.reason)
        return "finished anyway"

    handler = long_coroutine if face == "coroutine" else long_plain
    worker = serve(hub, {"Long": handler}, lambda w: started.is_set())
    assert hub.fake.abandons == [Abandon(token, None, ignore_attempt=True)]
    assert reasons == ["worker shutting down"]
    assert hub.fake.acked == {} and worker.stats.given_back == 1


def test_with_an_owner_the_heartbeat_renews_its_sessions_through_errors() -> None:
    hub = AsyncRecordingHub()
    hub.fake.session_errors.append(RetryableError("renew_session_lock", "deadlock", "40P01"))
    # Session locks of 30 ms: the heartbeat runs every 10 ms.
    options: WorkerOptions = {"owner_id": "worker-a", "session_lock_timeout_ms": 30}
    serve(hub, {}, lambda w: len(hub.fake.session_renewals) >= 2, **options)
    assert hub.fake.session_renewals[0] == SessionRenewal(("worker-a",), 30, 300_000)
    assert hub.fake.fetches[0].owner_id == "worker-a"
    assert hub.fake.fetches[0].session_lock_timeout_ms == 30


def test_a_failing_fetch_is_retried_and_the_slot_keeps_serving() -> None:
    hub = AsyncRecordingHub()
    hub.fake.fetch_errors.append(RetryableError("fetch_work_item", "server restarting", "57P03"))
    token = hub.fake.add("Echo", "hi", activity_id=1)
    worker = serve(hub, {"Echo": lambda ctx, value: value}, lambda w: token in hub.fake.acked)
    assert result_of(hub.fake.acked[token]) == "hi" and worker.stats.completed == 1


def test_a_transient_ack_failure_is_retried_and_the_item_counted_once() -> None:
    hub = AsyncRecordingHub()
    hub.fake.ack_errors.append(RetryableError("ack_work_item", "connection lost", "08006"))
    token = hub.fake.add("Echo", 1, activity_id=1)
    worker = serve(hub, {"Echo": lambda ctx, value: value}, lambda w: token in hub.fake.acked)
    assert hub.fake.ack_attempts == [token, token] and worker.stats.completed == 1


def test_leaving_async_with_at_once_stops_the_worker() -> None:
    async def main() -> None:
        async with AsyncActivityWorker(AsyncRecordingHub(), concurrency=1, idle_poll_ms=1):
            pass  # e.g. a body that only schedules work elsewhere

    asyncio.run(asyncio.wait_for(main(), timeout=0.1))
