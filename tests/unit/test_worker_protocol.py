"""The threaded ActivityWorker against a recording fake of WorkerCalls: what
it acks for a handler's result or error, what it gives back and how
(unregistered activities, shutdown), what it leaves alone (a lost lease, an
unreadable item), the arguments of its fetches and session heartbeats, and
that a failing call never stops a slot. No database; every wait is on a
condition of the fake hub."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Unpack

import pytest

from provider import ActivityContext, ActivityWorker, LockLost, RetryableError, TagFilter
from provider.worker.core import UNREGISTERED_RETRY_MS, WorkerOptions
from tests.unit.fakes import (
    Abandon,
    RecordingHub,
    SessionRenewal,
    failure_details,
    result_of,
    variant,
)


@contextmanager
def serving(
    hub: RecordingHub, handlers: dict[str, Any], **options: Unpack[WorkerOptions]
) -> Iterator[ActivityWorker]:
    """A started worker of one slot (unless told otherwise) that polls every
    millisecond; stopped on leaving."""
    settings: WorkerOptions = {"concurrency": 1, "idle_poll_ms": 1, "max_idle_poll_ms": 5}
    settings.update(options)
    worker = ActivityWorker(hub, **settings)
    for name, handler in handlers.items():
        worker.register(name, handler)
    with worker:
        yield worker


def test_a_result_is_acked_as_the_completion_of_its_activity() -> None:
    hub = RecordingHub()
    token = hub.add("Double", 21, activity_id=5)
    with serving(hub, {"Double": lambda ctx, value: value * 2}) as worker:
        assert hub.wait_for(lambda: token in hub.acked)
    assert hub.acked[token] == {
        "ActivityCompleted": {"instance": "i", "execution_id": 1, "id": 5, "result": "42"}
    }
    assert (worker.stats.started, worker.stats.completed, worker.stats.failed) == (1, 1, 0)
    assert hub.abandons == []


def test_the_handler_sees_the_item_it_runs_in_its_context() -> None:
    hub = RecordingHub()
    token = hub.add_item("Resize", None, activity_id=9, attempt=2, session_id="s-1", tag="gpu")
    seen: list[ActivityContext] = []

    def resize(ctx: ActivityContext, value: None) -> None:
        seen.append(ctx)

    with serving(hub, {"Resize": resize}, tags=TagFilter.only("gpu")):
        assert hub.wait_for(lambda: token in hub.acked)
    (ctx,) = seen
    assert (ctx.instance_id, ctx.execution_id, ctx.activity_id, ctx.activity_name) == (
        "i",
        1,
        9,
        "Resize",
    )
    assert (ctx.session_id, ctx.tag, ctx.attempt, ctx.lock_token) == ("s-1", "gpu", 2, token)
    assert not ctx.is_cancelled


def test_an_input_that_is_not_json_text_reaches_the_handler_as_it_is() -> None:
    hub = RecordingHub()
    token = hub.add_item("Echo", None, activity_id=1, input="not json {")
    with serving(hub, {"Echo": lambda ctx, value: value}):
        assert hub.wait_for(lambda: token in hub.acked)
    assert result_of(hub.acked[token]) == "not json {"


def test_a_handler_that_raises_fails_its_activity_for_good() -> None:
    hub = RecordingHub()
    token = hub.add("Explode", None, activity_id=3)

    def explode(ctx: ActivityContext, value: None) -> None:
        raise KeyError("no such image")

    with serving(hub, {"Explode": explode}) as worker:
        assert hub.wait_for(lambda: token in hub.acked)
    details = failure_details(hub.acked[token])
    assert details == {
        "kind": "ActivityFailed",
        "message": "KeyError: 'no such image'",
        "retryable": False,
    }
    assert (worker.stats.completed, worker.stats.failed) == (0, 1)


def test_a_coroutine_handler_runs_to_its_result_in_the_threaded_worker() -> None:
    hub = RecordingHub()
    token = hub.add("Later", 1, activity_id=1)

    async def later(ctx: ActivityContext, value: int) -> int:
        await asyncio.sleep(0)
        return value + 1

    with serving(hub, {"Later": later}):
        assert hub.wait_for(lambda: token in hub.acked)
    assert result_of(hub.acked[token]) == 2


def test_an_unregistered_activity_is_given_back_later_and_counts_as_an_attempt() -> None:
    hub = RecordingHub()
    token = hub.add("Unknown", None, activity_id=7)
    with serving(hub, {}) as worker:
        assert hub.wait_for(lambda: bool(hub.abandons))
    assert hub.abandons == [Abandon(token, UNREGISTERED_RETRY_MS, ignore_attempt=False)]
    assert UNREGISTERED_RETRY_MS == 1_000
    assert token not in hub.acked and worker.stats.started == 0


def test_an_item_fetched_more_than_max_attempts_is_failed_as_poison_unrun() -> None:
    hub = RecordingHub()
    last_chance = hub.add("Run", None, activity_id=1, attempt=3)
    poison = hub.add("Run", None, activity_id=2, attempt=4)
    ran: list[int] = []

    def run(ctx: ActivityContext, value: None) -> str:
        ran.append(ctx.activity_id)
        return "ran"

    with serving(hub, {"Run": run}, max_attempts=3) as worker:
        assert hub.wait_for(lambda: len(hub.acked) == 2)
    assert ran == [1]  # attempt 3 of at most 3 still runs
    assert result_of(hub.acked[last_chance]) == "ran"
    completion = hub.acked[poison]
    assert variant(completion) == "ActivityFailed" and completion is not None
    details = completion["ActivityFailed"]["details"]["Poison"]
    assert (details["attempt_count"], details["max_attempts"]) == (4, 3)
    assert worker.stats.poisoned == 1


def test_the_fetch_asks_for_the_workers_lock_timeout_tags_and_owner() -> None:
    hub = RecordingHub()
    with serving(hub, {}) as worker:
        assert hub.wait_for(lambda: bool(hub.fetches))
    # Without settings: the hub's worker lock timeout, untagged items, no owner.
    first = hub.fetches[0]
    assert first.lock_timeout_ms == hub.config.worker_lock_timeout_ms == worker.lock_timeout_ms
    assert (first.owner_id, first.tags) == (None, TagFilter.default_only())

    hub = RecordingHub()
    gpu = TagFilter.default_and("gpu")
    options: WorkerOptions = {
        "lock_timeout_ms": 1_234,
        "tags": gpu,
        "owner_id": "w-1",
        "session_lock_timeout_ms": 4_321,
    }
    with serving(hub, {}, **options):
        assert hub.wait_for(lambda: bool(hub.fetches))
    assert hub.fetches[0] == type(first)(1_234, "w-1", 4_321, gpu)


def test_a_transient_ack_failure_is_retried_and_the_item_counted_once() -> None:
    hub = RecordingHub(ack_errors=[RetryableError("ack_work_item", "connection lost", "08006")])
    token = hub.add("Echo", "hi", activity_id=1)
    with serving(hub, {"Echo": lambda ctx, value: value}) as worker:
        assert hub.wait_for(lambda: token in hub.acked)
    assert hub.ack_attempts == [token, token]
    assert worker.stats.completed == 1


def test_a_lease_lost_during_the_work_cancels_it_and_nothing_is_acked() -> None:
    hub = RecordingHub(renew_errors=[LockLost("renew_work_item_lock", "taken over", "TH001")])
    token = hub.add("Long", None, activity_id=1)
    fetches_when_started: list[int] = []
    reasons: list[str | None] = []

    def long(ctx: ActivityContext, value: None) -> str:
        fetches_when_started.append(len(hub.fetches))
        assert ctx.token.wait(5), "the keeper must cancel the work"
        reasons.append(ctx.token.reason)
        ctx.token.raise_if_cancelled()
        return "too late"

    # A 150 ms lock is renewed after 50 ms: that renewal finds the lease gone.
    with serving(hub, {"Long": long}, lock_timeout_ms=150) as worker:
        # The slot fetches again once it is done with the item.
        assert hub.wait_for(
            lambda: bool(fetches_when_started) and len(hub.fetches) > fetches_when_started[0]
        )
    assert hub.renewals == [token]
    assert reasons == ["lease lost: taken over"]
    assert hub.ack_attempts == [] and hub.abandons == []
    assert worker.stats.lost == 1 and worker.stats.completed == 0


def test_stop_gives_a_running_item_back_without_counting_the_attempt() -> None:
    hub = RecordingHub()
    token = hub.add("Long", None, activity_id=1)
    started = threading.Event()
    reasons: list[str | None] = []

    def long(ctx: ActivityContext, value: None) -> str:
        started.set()
        ctx.token.wait(5)
        reasons.append(ctx.token.reason)
        return "finished anyway"

    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=1)
    worker.register("Long", long)
    worker.start()
    assert started.wait(5)
    worker.stop(timeout_s=5)
    assert hub.abandons == [Abandon(token, None, ignore_attempt=True)]
    assert reasons == ["worker shutting down"]
    assert token not in hub.acked
    assert worker.stats.given_back == 1 and worker.stats.completed == 0


def test_an_unreadable_item_is_left_to_expire_and_the_slot_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = RecordingHub()
    hub.add_unreadable("lock_unreadable")
    token = hub.add("Echo", 1, activity_id=2)
    with serving(hub, {"Echo": lambda ctx, value: value}):
        assert hub.wait_for(lambda: token in hub.acked)
    assert list(hub.acked) == [token] and hub.abandons == []
    events = [getattr(record, "event", None) for record in caplog.records]
    assert "worker.item_unreadable" in events


def test_a_failing_fetch_is_logged_and_retried_and_the_slot_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = RetryableError("fetch_work_item", "server restarting", "57P03")
    hub = RecordingHub(fetch_errors=[down])
    token = hub.add("Echo", 1, activity_id=1)
    with serving(hub, {"Echo": lambda ctx, value: value}):
        assert hub.wait_for(lambda: token in hub.acked)
    failed = [r for r in caplog.records if getattr(r, "event", None) == "worker.fetch_failed"]
    assert len(failed) == 1 and getattr(failed[0], "sqlstate", None) == "57P03"


def test_with_an_owner_the_heartbeat_renews_its_sessions_through_errors() -> None:
    hub = RecordingHub(session_errors=[RetryableError("renew_session_lock", "deadlock", "40P01")])
    # Session locks of 30 ms: the heartbeat runs every 10 ms.
    options: WorkerOptions = {
        "owner_id": "worker-a",
        "session_lock_timeout_ms": 30,
        "session_idle_timeout_ms": 60_000,
    }
    with serving(hub, {}, **options):
        assert hub.wait_for(lambda: len(hub.session_renewals) >= 2)
    assert hub.session_renewals[0] == SessionRenewal(("worker-a",), 30, 60_000)
    assert hub.session_errors == []  # the failed heartbeat was retried, not fatal


def test_without_an_owner_there_is_no_session_heartbeat() -> None:
    hub = RecordingHub()
    with serving(hub, {}):
        assert hub.wait_for(lambda: len(hub.fetches) >= 3)
    assert hub.session_renewals == []
