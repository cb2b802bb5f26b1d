"""The API fails fast and precisely, before any SQL (issue 22, item 5): a URL
libpq cannot parse, a worker given the other face's hub, an empty tag, an
activity registered twice, and data JSON cannot hold are refused where they
are passed, naming the call. No database: a hub made with open_pool=False
never connects, so a refusal it raises was made in Python."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from devkit.waiting import wait_until, wait_until_async
from provider import (
    ActivityWorker,
    AsyncActivityWorker,
    AsyncTaskHub,
    ConfigurationError,
    InvalidInput,
    PermanentError,
    TagFilter,
    TaskHub,
    TaskHubConfig,
)
from provider.client.arguments import MAX_ID_BYTES, MAX_PAYLOAD_BYTES
from provider.masking import masked
from provider.types import JsonObject, WorkItemLease
from tests.unit.test_worker_loop_with_a_fake_hub import FakeHub

UNUSED_URL = "postgresql://app:s3cret@db.invalid/app"


def cyclic() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


@pytest.fixture
def unopened() -> TaskHub:
    """A hub that never connects: any SQL it tried would fail as a pool error."""
    return TaskHub(TaskHubConfig(url=UNUSED_URL), open_pool=False)


# -- opening a hub ----------------------------------------------------------

BAD_URLS = {
    "not a url": "not a url",
    "unknown URI parameter": "postgresql://app:s3cret@db/app?no_such_option=1",
    "spaces in a password": "postgresql://app:s3 cret@db/app",
    "empty": "",
}


@pytest.mark.parametrize("url", BAD_URLS.values(), ids=BAD_URLS.keys())
def test_a_url_libpq_cannot_parse_is_a_configuration_error_at_once(url: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as refused:
        TaskHub.connect(url)
    assert time.monotonic() - started < 1
    assert str(refused.value).startswith("TaskHub.connect: ")
    assert refused.value.operation == "TaskHub.connect"
    assert isinstance(refused.value, PermanentError) and not refused.value.retryable
    assert "s3cret" not in str(refused.value) and "s3 cret" not in str(refused.value)


def test_the_asyncio_hub_checks_its_url_when_it_is_made() -> None:
    with pytest.raises(ConfigurationError, match=r"^AsyncTaskHub.connect: .*not a libpq URL"):
        AsyncTaskHub.connect("not a url")


def test_a_lazy_hub_is_made_without_connecting(unopened: TaskHub) -> None:
    assert unopened.config.url == UNUSED_URL  # db.invalid: no such host, and no error


def test_connect_timeout_must_be_positive() -> None:
    with pytest.raises(InvalidInput, match="connect_timeout_s"):
        TaskHubConfig(url=UNUSED_URL, connect_timeout_s=0)


# Everything between :// and the last @ (the user too), whatever it holds.
MASKED = {
    "postgresql://app:s3cret@db/app": "postgresql://***@db/app",
    "postgresql://app:p@ss@db1,db2:5433/app": "postgresql://***@db1,db2:5433/app",
    "postgresql://app@db:5432/app": "postgresql://***@db:5432/app",
    "postgresql://app:a/b+c=d@e f@db/app": "postgresql://***@db/app",
    "postgresql://db:5432/app": "postgresql://db:5432/app",
    "host=db password=s3cret user=app": "host=db password=*** user=app",
    "host=db password='s3 cret' user=app": "host=db password=*** user=app",
}


@pytest.mark.parametrize(("text", "shown"), MASKED.items(), ids=MASKED.keys())
def test_passwords_are_masked_in_urls_and_connection_strings(text: str, shown: str) -> None:
    assert masked(text) == shown


def test_a_password_quoted_anywhere_else_is_masked_too() -> None:
    assert masked('spaces found in "s3 cret", or s3 cret', ("s3 cret",)) == (
        'spaces found in "***", or ***'
    )
    # A short one only where libpq quotes it: not every "p" of the message.
    assert masked('found in "p", please', ("p",)) == 'found in "***", please'


# -- the outbox's arguments, checked before any SQL ---------------------------

BAD_STARTS: dict[str, dict[str, Any]] = {
    "empty instance id": {"instance_id": ""},
    "instance id not a text": {"instance_id": 7},
    "instance id over the byte limit": {"instance_id": "i" * (MAX_ID_BYTES + 1)},
    "instance id over the byte limit in UTF-8": {"instance_id": "é" * (MAX_ID_BYTES // 2 + 1)},
    "NUL in the instance id": {"instance_id": "order\x001"},
    "empty name": {"name": ""},
    "NUL in the name": {"name": "Or\x00der"},
    "a lone surrogate in the name": {"name": "Order\ud800"},
    "empty version": {"version": ""},
    "version not a text": {"version": 2},
    "NUL in the version": {"version": "1.0\x00"},
    "input a set": {"input": {1, 2}},
    "input an object()": {"input": object()},
    "input with a cycle": {"input": cyclic()},
    "input over the size limit": {"input": "x" * MAX_PAYLOAD_BYTES},
}
BAD_EVENTS: dict[str, dict[str, Any]] = {
    "empty instance id": {"instance_id": ""},
    "NUL in the instance id": {"instance_id": "order\x001"},
    "empty name": {"name": ""},
    "name not a text": {"name": None},
    "NUL in the name": {"name": "Pa\x00id"},
    "data a set": {"data": {1, 2}},
    "data over the size limit": {"data": "x" * MAX_PAYLOAD_BYTES},
}


def start_arguments(**bad: Any) -> dict[str, Any]:
    return {"instance_id": "order-1", "name": "Order", "input": {"n": 1}, "version": None, **bad}


def event_arguments(**bad: Any) -> dict[str, Any]:
    return {"instance_id": "order-1", "name": "Paid", "data": True, **bad}


@pytest.mark.parametrize("bad", BAD_STARTS.values(), ids=BAD_STARTS.keys())
def test_a_bad_start_is_refused_in_python(unopened: TaskHub, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as refused:
        unopened.start_orchestration(**start_arguments(**bad))
    assert refused.value.operation == "start_orchestration"
    assert refused.value.sqlstate == "22023"


@pytest.mark.parametrize("bad", BAD_EVENTS.values(), ids=BAD_EVENTS.keys())
def test_a_bad_event_is_refused_in_python(unopened: TaskHub, bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as refused:
        unopened.raise_event(**event_arguments(**bad))
    assert refused.value.operation == "raise_event"


def test_input_json_cannot_hold_names_the_call_and_the_problem(unopened: TaskHub) -> None:
    with pytest.raises(InvalidInput) as refused:
        unopened.start_orchestration("order-1", "Order", {"tags": {"a"}})
    assert str(refused.value) == (
        "start_orchestration: input is not JSON-serialisable:"
        " Object of type set is not JSON serializable"
    )


def test_the_asyncio_face_refuses_the_same_starts() -> None:
    hub = AsyncTaskHub.connect(UNUSED_URL)  # not opened: no pool to call
    with pytest.raises(InvalidInput, match=r"^start_orchestration: instance_id"):
        asyncio.run(hub.start_orchestration("", "Order"))
    with pytest.raises(InvalidInput, match=r"^raise_event: data is not JSON-serialisable"):
        asyncio.run(hub.raise_event("order-1", "Paid", object()))


# -- data JSON cannot hold, wherever the provider encodes it --------------------

UNENCODABLE: dict[str, tuple[str, Callable[[TaskHub], Any]]] = {
    "a work item": (
        "enqueue_orchestrator_work",
        lambda hub: hub.enqueue_orchestrator_work("i", {"ExternalRaised": {"data": {1}}}),
    ),
    "a worker item": (
        "enqueue_worker_work",
        lambda hub: hub.enqueue_worker_work({"ActivityExecute": {"input": object()}}),
    ),
    "a completion": (
        "ack_work_item",
        lambda hub: hub.ack_work_item("lock", {"ActivityCompleted": {"instance": "i", "r": {1}}}),
    ),
    "a history event": (
        "ack_orchestration_item",
        lambda hub: hub.ack_orchestration_item(
            "lock", 1, history_delta=[{"event_id": 1, "x": {1}}]
        ),
    ),
    "a worker item of a turn": (
        "ack_orchestration_item",
        lambda hub: hub.ack_orchestration_item("lock", 1, worker_items=[{"A": object()}]),
    ),
    "appended history": (
        "append_history",
        lambda hub: hub.append_history("i", 1, [{"event_id": 1, "x": object()}]),
    ),
    "an item for the parent": (
        "enqueue_for_orchestrator",
        lambda hub: hub.enqueue_for_orchestrator({"ExternalRaised": {"instance": "i", "d": {1}}}),
    ),
}


@pytest.mark.parametrize(("operation", "call"), UNENCODABLE.values(), ids=UNENCODABLE.keys())
def test_data_json_cannot_hold_is_invalid_input_naming_the_public_call(
    unopened: TaskHub, operation: str, call: Callable[[TaskHub], Any]
) -> None:
    with pytest.raises(InvalidInput, match="is not JSON-serialisable") as refused:
        call(unopened)
    assert refused.value.operation == operation
    assert str(refused.value).startswith(f"{operation}: ")


def test_an_error_inside_a_plan_names_the_operation_called() -> None:
    """A worker item that is no ActivityExecute used to say enqueue_for_worker."""
    hub = TaskHub(TaskHubConfig(url=UNUSED_URL), open_pool=False)
    with pytest.raises(InvalidInput, match=r"^enqueue_worker_work: "):
        hub.enqueue_worker_work({"StartOrchestration": {}})


# -- workers and their hubs -----------------------------------------------------


def test_the_asyncio_worker_refuses_a_blocking_hub(unopened: TaskHub) -> None:
    with pytest.raises(TypeError) as refused:
        AsyncActivityWorker(unopened)  # type: ignore[arg-type]
    message = str(refused.value)
    assert "AsyncActivityWorker needs an AsyncTaskHub, got TaskHub" in message
    assert "ActivityWorker" in message.split("or serve this hub with")[1]


def test_the_threaded_worker_refuses_an_asyncio_hub() -> None:
    with pytest.raises(TypeError, match="ActivityWorker needs a TaskHub, got AsyncTaskHub") as it:
        ActivityWorker(AsyncTaskHub.connect(UNUSED_URL))  # type: ignore[arg-type]
    assert "or serve this hub with AsyncActivityWorker" in str(it.value)


def test_a_hub_without_the_worker_calls_is_refused() -> None:
    with pytest.raises(TypeError, match=r"needs a TaskHub, got object \(it has no config\)"):
        ActivityWorker(object())  # type: ignore[arg-type]


# -- tags and registrations -----------------------------------------------------

BAD_TAGS: dict[str, Callable[[], TagFilter]] = {
    "only an empty tag": lambda: TagFilter.only(""),
    "an empty tag among others": lambda: TagFilter.default_and("gpu", ""),
    "a tag that is not a text": lambda: TagFilter.only(7),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("make", BAD_TAGS.values(), ids=BAD_TAGS.keys())
def test_a_tag_must_be_a_non_empty_text(make: Callable[[], TagFilter]) -> None:
    with pytest.raises(InvalidInput, match=r"^TagFilter: a tag must be a non-empty text"):
        make()


def test_an_activity_registered_twice_is_refused() -> None:
    worker = ActivityWorker(FakeHub())
    worker.register("Resize", lambda ctx, value: value)
    with pytest.raises(InvalidInput) as refused:

        @worker.activity("Resize")
        def resize_again(ctx: Any, value: Any) -> Any:
            return value

    assert str(refused.value) == "ActivityWorker.register: activity 'Resize' is already registered"


@pytest.mark.parametrize("name", ["", None], ids=["empty", "none"])
def test_an_activity_needs_a_name(name: Any) -> None:
    with pytest.raises(InvalidInput, match="activity name must be a non-empty text"):
        ActivityWorker(FakeHub()).register(name, lambda ctx, value: value)


def test_an_activity_needs_a_handler() -> None:
    with pytest.raises(InvalidInput, match="handler of 'Resize' is not callable"):
        ActivityWorker(FakeHub()).register("Resize", "resize")  # type: ignore[arg-type]


# -- an activity result JSON cannot hold ----------------------------------------


def failure_message(completion: JsonObject | None) -> str:
    assert completion is not None and "ActivityFailed" in completion
    details = completion["ActivityFailed"]["details"]["Application"]
    assert details["retryable"] is False
    return str(details["message"])


def test_a_result_json_cannot_hold_fails_that_activity_and_the_loop_goes_on() -> None:
    hub = FakeHub()
    bad, good = hub.add("Tags", None, activity_id=1), hub.add("Echo", "hi", activity_id=2)
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=1)
    worker.register("Tags", lambda ctx, value: {"a", "b"})
    worker.register("Echo", lambda ctx, value: value)
    with worker:
        wait_until(lambda: len(hub.acked) >= 2, timeout_s=10, interval_s=0.005)
    assert failure_message(hub.acked[bad]) == (
        "InvalidInput: activity Tags#1: its result is not JSON-serialisable:"
        " Object of type set is not JSON serializable"
    )
    assert hub.acked[good] == {
        "ActivityCompleted": {"instance": "i", "execution_id": 1, "id": 2, "result": '"hi"'}
    }
    assert (worker.stats.failed, worker.stats.completed) == (1, 1)


class AsyncFakeHub:
    """FakeHub's calls as coroutines, for AsyncActivityWorker."""

    def __init__(self) -> None:
        self.fake = FakeHub()
        self.config = self.fake.config

    async def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None:
        return self.fake.fetch_work_item()

    async def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> None:
        self.fake.ack_work_item(lock_token, completion)

    async def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None:
        self.fake.abandon_work_item(lock_token)

    async def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int:
        return self.fake.renew_work_item_lock(lock_token, extend_ms)

    async def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int:
        return 0

    async def cleanup_orphaned_sessions(self) -> int:
        return 0


def test_the_asyncio_worker_fails_such_an_activity_too() -> None:
    hub = AsyncFakeHub()
    bad = hub.fake.add("Tags", None, activity_id=1)
    good = hub.fake.add("Echo", {"n": 1}, activity_id=2)

    async def serve() -> AsyncActivityWorker:
        worker = AsyncActivityWorker(hub, concurrency=1, idle_poll_ms=1)

        @worker.activity("Tags")
        async def tags(ctx: Any, value: Any) -> Any:
            return object()

        worker.register("Echo", lambda ctx, value: value)
        async with worker:
            await wait_until_async(lambda: len(hub.fake.acked) >= 2, timeout_s=10, interval_s=0.005)
        return worker

    worker = asyncio.run(serve())
    assert failure_message(hub.fake.acked[bad]).startswith(
        "InvalidInput: activity Tags#1: its result is not JSON-serialisable: Object of type object"
    )
    completed = hub.fake.acked[good]
    assert completed is not None
    assert json.loads(completed["ActivityCompleted"]["result"]) == {"n": 1}
    assert (worker.stats.failed, worker.stats.completed) == (1, 1)


def test_a_bad_setting_names_the_worker_that_was_made() -> None:
    with pytest.raises(InvalidInput, match=r"^AsyncActivityWorker: concurrency"):
        AsyncActivityWorker(AsyncFakeHub(), concurrency=0)
    with pytest.raises(InvalidInput, match=r"^ActivityWorker: concurrency"):
        ActivityWorker(FakeHub(), concurrency=0)
