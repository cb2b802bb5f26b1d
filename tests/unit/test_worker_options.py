"""What a worker refuses when it is made or told of a handler, before it
serves anything: a hub missing one of the calls it makes (check_hub, for
each call), a hub whose calls are of the other face, settings out of range,
tags that are no TagFilter, and bad registrations, on both workers; and the
settings it takes from the hub when none are given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from provider import ActivityWorker, AsyncActivityWorker, InvalidInput, TagFilter
from provider.worker.calls import AsyncWorkerCalls, WorkerCalls, check_hub
from provider.worker.core import WorkerCore
from tests.unit.fakes import AsyncRecordingHub, RecordingHub

WORKERS: dict[str, Callable[..., WorkerCore]] = {
    "ActivityWorker": lambda **options: ActivityWorker(RecordingHub(), **options),
    "AsyncActivityWorker": lambda **options: AsyncActivityWorker(AsyncRecordingHub(), **options),
}


class Without:
    """A hub of either face with one call taken away (set to None)."""

    def __init__(self, hub: RecordingHub | AsyncRecordingHub, missing: str) -> None:
        self.whole, self._missing = hub, missing
        self.config = hub.config

    def __getattr__(self, name: str) -> Any:
        return None if name == self._missing else getattr(self.whole, name)


def calls_of(protocol: type) -> list[str]:
    """The calls a Protocol of provider/worker/calls.py declares (config aside)."""
    return sorted(name for name in vars(protocol) if not name.startswith("_") and name != "config")


def test_both_faces_make_the_same_calls() -> None:
    assert calls_of(WorkerCalls) == calls_of(AsyncWorkerCalls)
    assert len(calls_of(WorkerCalls)) == 6


@pytest.mark.parametrize("missing", calls_of(WorkerCalls))
def test_a_hub_missing_any_call_of_the_protocol_is_refused_naming_that_call(
    missing: str,
) -> None:
    for face, asyncio_calls in ((RecordingHub(), False), (AsyncRecordingHub(), True)):
        check_hub("W", face, asyncio_calls=asyncio_calls)  # whole, it is fine
        with pytest.raises(TypeError, match=rf"\(it has no {missing}\)$"):
            check_hub("W", Without(face, missing), asyncio_calls=asyncio_calls)


class HalfAsync(RecordingHub):
    """A blocking hub with one coroutine call: a hub of neither face."""

    async def cleanup_orphaned_sessions(self) -> int:  # type: ignore[override]
        return 0


def test_a_hub_with_one_call_of_the_other_face_is_refused_by_both_workers() -> None:
    with pytest.raises(TypeError, match="whose calls are coroutines"):
        ActivityWorker(HalfAsync())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="whose calls are blocking"):
        AsyncActivityWorker(HalfAsync())  # type: ignore[arg-type]


@pytest.mark.parametrize("worker", WORKERS.values(), ids=WORKERS.keys())
@pytest.mark.parametrize("setting", ["concurrency", "max_attempts"])
def test_a_setting_below_one_is_refused(worker: Callable[..., WorkerCore], setting: str) -> None:
    with pytest.raises(InvalidInput, match="concurrency and max_attempts must be at least 1"):
        worker(**{setting: 0})


def test_tags_that_are_no_tag_filter_are_refused_with_the_way_to_write_them() -> None:
    with pytest.raises(InvalidInput, match=r"tags must be a TagFilter \(TagFilter.only"):
        ActivityWorker(RecordingHub(), tags="gpu")  # type: ignore[arg-type]


def test_unset_settings_come_from_the_hub_and_given_ones_win() -> None:
    hub = RecordingHub()
    worker = ActivityWorker(hub)
    assert worker.lock_timeout_ms == hub.config.worker_lock_timeout_ms
    assert worker.session_lock_timeout_ms == hub.config.session_lock_timeout_ms
    assert worker.tags == TagFilter.default_only()
    tuned = ActivityWorker(hub, lock_timeout_ms=1_000, session_lock_timeout_ms=2_000)
    assert (tuned.lock_timeout_ms, tuned.session_lock_timeout_ms) == (1_000, 2_000)


def test_a_negative_lock_timeout_is_refused_when_the_worker_is_made() -> None:
    with pytest.raises(InvalidInput):
        ActivityWorker(RecordingHub(), lock_timeout_ms=-1)


@pytest.mark.parametrize("worker", WORKERS.values(), ids=WORKERS.keys())
def test_each_worker_refuses_a_second_handler_for_a_name_naming_itself(
    worker: Callable[..., WorkerCore],
) -> None:
    made = worker()
    made.register("Resize", lambda ctx, value: value)
    name = type(made).__name__
    with pytest.raises(InvalidInput, match=rf"^{name}.register: activity 'Resize' is already"):
        made.register("Resize", lambda ctx, value: None)


def test_a_name_that_is_not_a_text_is_refused() -> None:
    with pytest.raises(InvalidInput, match="an activity name must be a non-empty text, got 7"):
        ActivityWorker(RecordingHub()).register(7, lambda ctx, value: value)  # type: ignore[arg-type]


def test_the_activity_decorator_leaves_the_function_callable_as_it_was() -> None:
    worker = ActivityWorker(RecordingHub())

    @worker.activity("Double")
    def double(ctx: Any, value: int) -> int:
        return value * 2

    assert double(None, 4) == 8
    assert worker._handlers == {"Double": double}


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_a_worker_as_wide_as_its_pool_warns_that_renewals_may_wait(
    name: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="provider.worker.activity_worker"):
        WORKERS[name](concurrency=4)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="provider.worker.activity_worker"):
        WORKERS[name](concurrency=10)
    (record,) = caplog.records
    assert f"{name}: concurrency 10 with a pool of 10 connections" in record.getMessage()
