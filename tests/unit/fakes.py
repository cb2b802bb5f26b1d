"""Fakes of the worker layer's protocols (provider/worker/calls.py), shared by
the unit tests: the hubs of test_worker_loop_with_a_fake_hub (FakeHub) and
test_api_errors (AsyncFakeHub), extended to record every argument of every
call and to fail calls on a script; a WakeupListener driven by hand; and
hubs with push wakeups. Tests wait on conditions (`RecordingHub.wait_for`,
devkit/waiting.py), never for a fixed time."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from provider import TagFilter
from provider.types import JsonObject, WorkItemLease
from provider.worker.calls import WakeupSubscriber
from tests.unit.test_api_errors import AsyncFakeHub
from tests.unit.test_worker_loop_with_a_fake_hub import FakeHub

LISTENER_PID = 4242


@dataclass(frozen=True)
class FetchCall:
    """The arguments of one fetch_work_item."""

    lock_timeout_ms: int | None
    owner_id: str | None
    session_lock_timeout_ms: int | None
    tags: TagFilter | None


@dataclass(frozen=True)
class Abandon:
    """The arguments of one abandon_work_item."""

    lock_token: str
    delay_ms: int | None
    ignore_attempt: bool


@dataclass(frozen=True)
class SessionRenewal:
    owner_ids: tuple[str, ...]
    extend_ms: int
    idle_timeout_ms: int


@dataclass
class RecordingHub(FakeHub):
    """FakeHub that records each call's arguments and raises, in order, the
    errors scripted for a call (then answers as FakeHub does). Every call
    notifies `changed`, so a test waits for what it expects (`wait_for`)."""

    fetches: list[FetchCall] = field(default_factory=list)
    fetch_errors: list[Exception] = field(default_factory=list)
    ack_attempts: list[str] = field(default_factory=list)
    ack_errors: list[Exception] = field(default_factory=list)
    abandons: list[Abandon] = field(default_factory=list)
    renewals: list[str] = field(default_factory=list)
    renew_errors: list[Exception] = field(default_factory=list)
    session_renewals: list[SessionRenewal] = field(default_factory=list)
    session_errors: list[Exception] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def add_item(self, name: str, value: Any, *, activity_id: int, **more: Any) -> str:
        """FakeHub.add, with more fields in the ActivityExecute body
        (session_id, tag, input as raw text, ...)."""
        attempt = more.pop("attempt", 1)
        token = self.add(name, value, activity_id=activity_id, attempt=attempt)
        with self.changed:
            self.queued[-1].work_item["ActivityExecute"].update(more)
            self.changed.notify_all()
        return token

    def add_unreadable(self, lock_token: str) -> None:
        """A worker item that is no ActivityExecute (written behind the provider's back)."""
        with self.lock:
            self.queued.append(WorkItemLease({"SomethingElse": {}}, lock_token, 1))

    def wait_for(self, done: Callable[[], bool], timeout_s: float = 5.0) -> bool:
        """Wait for `done` (about this hub's calls) to hold; False after timeout_s."""
        with self.changed:
            return self.changed.wait_for(done, timeout_s)

    def _called(self, script: list[Exception]) -> None:
        """Under `changed`: wake the waiters, then fail as scripted."""
        self.changed.notify_all()
        if script:
            raise script.pop(0)

    def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None:
        with self.changed:
            self.fetches.append(FetchCall(lock_timeout_ms, owner_id, session_lock_timeout_ms, tags))
            self._called(self.fetch_errors)
        return super().fetch_work_item()

    def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> None:
        with self.changed:
            self.ack_attempts.append(lock_token)
            self._called(self.ack_errors)
            super().ack_work_item(lock_token, completion)

    def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None:
        with self.changed:
            self.abandons.append(Abandon(lock_token, delay_ms, ignore_attempt))
            super().abandon_work_item(lock_token)
            self.changed.notify_all()

    def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int:
        with self.changed:
            self.renewals.append(lock_token)
            self._called(self.renew_errors)
        return int(time.time() * 1000) + extend_ms

    def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int:
        with self.changed:
            self._called(self.session_errors)
            self.session_renewals.append(
                SessionRenewal(tuple(owner_ids), extend_ms, idle_timeout_ms)
            )
        return len(owner_ids)


class AsyncRecordingHub(AsyncFakeHub):
    """AsyncFakeHub over a RecordingHub, passing every argument on."""

    fake: RecordingHub

    def __init__(self, fake: RecordingHub | None = None) -> None:
        super().__init__()
        self.fake = fake or RecordingHub()
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
        return self.fake.fetch_work_item(
            lock_timeout_ms,
            owner_id=owner_id,
            session_lock_timeout_ms=session_lock_timeout_ms,
            tags=tags,
            caller_now_ms=caller_now_ms,
        )

    async def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None:
        self.fake.abandon_work_item(lock_token, delay_ms=delay_ms, ignore_attempt=ignore_attempt)

    async def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int:
        return self.fake.renew_work_item_lock(lock_token, extend_ms, timeout_s=timeout_s)

    async def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int:
        return self.fake.renew_session_lock(owner_ids, extend_ms, idle_timeout_ms)


class FakeListener:
    """A WakeupListener driven by hand, as the LISTEN thread of
    provider/client/wakeups.py drives its subscribers: `listen(pid)` is a new
    listening connection, `notify()` a notification, `lose()` a lost one."""

    def __init__(self, pid: int | None = LISTENER_PID) -> None:
        self.pid = pid
        self.subscribers: list[WakeupSubscriber] = []
        self.releases = 0

    def subscribe(self, subscriber: WakeupSubscriber) -> None:
        self.subscribers.append(subscriber)
        if self.pid is not None:
            subscriber.listening(self.pid)

    def release(self) -> None:
        self.releases += 1

    def listen(self, pid: int) -> None:
        self.pid = pid
        for subscriber in self.subscribers:
            subscriber.listening(pid)

    def notify(self) -> None:
        for subscriber in self.subscribers:
            subscriber.notified()

    def lose(self) -> None:
        self.pid = None
        for subscriber in self.subscribers:
            subscriber.lost()


@dataclass
class PushHub(RecordingHub):
    """A RecordingHub with push wakeups (a WakeupSource): one FakeListener."""

    listener: FakeListener = field(default_factory=FakeListener)
    listeners_asked: int = 0
    waiting_calls: list[tuple[int, bool]] = field(default_factory=list)

    def wakeups(self, queue: str = "worker") -> FakeListener:
        self.listeners_asked += 1
        return self.listener

    def set_wakeup_waiting(self, pid: int, waiting: bool) -> None:
        with self.changed:
            self.waiting_calls.append((pid, waiting))
            self.changed.notify_all()

    def add_and_notify(self, name: str, value: Any, *, activity_id: int) -> str:
        """Work committed: the item is queued, then the server notifies."""
        token = self.add_item(name, value, activity_id=activity_id)
        self.listener.notify()
        return token


class AsyncPushHub(AsyncRecordingHub):
    """AsyncRecordingHub with push wakeups (an AsyncWakeupSource)."""

    fake: PushHub

    def __init__(self) -> None:
        super().__init__(PushHub())

    def wakeups(self, queue: str = "worker") -> FakeListener:
        return self.fake.wakeups(queue)

    async def set_wakeup_waiting(self, pid: int, waiting: bool) -> None:
        self.fake.set_wakeup_waiting(pid, waiting)


def variant(completion: JsonObject | None) -> str:
    """ActivityCompleted or ActivityFailed."""
    assert completion is not None
    return next(iter(completion))


def failure_details(completion: JsonObject | None) -> dict[str, Any]:
    """The Application details of an ActivityFailed."""
    assert variant(completion) == "ActivityFailed"
    assert completion is not None
    details: dict[str, Any] = completion["ActivityFailed"]["details"]["Application"]
    return details


def result_of(completion: JsonObject | None) -> Any:
    """The decoded result of an ActivityCompleted."""
    assert variant(completion) == "ActivityCompleted"
    assert completion is not None
    return json.loads(completion["ActivityCompleted"]["result"])
