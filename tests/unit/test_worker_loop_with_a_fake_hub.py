"""ActivityWorker driven by an in-memory fake of the calls it makes
(provider.worker.calls.WorkerCalls): results, failures, poison and an
unknown activity, without a database."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from devkit.waiting import wait_until
from provider import ActivityContext, ActivityWorker, TagFilter, TaskHubConfig
from provider.types import JsonObject, WorkItemLease


@dataclass
class FakeHub:
    """Worker items in memory; every call the worker makes is recorded."""

    config: TaskHubConfig = field(default_factory=lambda: TaskHubConfig(url="postgresql://unused"))
    queued: list[WorkItemLease] = field(default_factory=list)
    acked: dict[str, JsonObject | None] = field(default_factory=dict)
    abandoned: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, value: Any, *, activity_id: int, attempt: int = 1) -> str:
        body = {
            "instance": "i",
            "execution_id": 1,
            "id": activity_id,
            "name": name,
            "input": json.dumps(value),
        }
        token = f"lock_{activity_id}"
        self.queued.append(WorkItemLease({"ActivityExecute": body}, token, attempt))
        return token

    def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None:
        with self.lock:
            return self.queued.pop(0) if self.queued else None

    def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> None:
        self.acked[lock_token] = completion

    def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None:
        self.abandoned.append(lock_token)

    def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int:
        return int(time.time() * 1000) + extend_ms

    def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int:
        return 0

    def cleanup_orphaned_sessions(self) -> int:
        return 0


def run_until(hub: FakeHub, done: Callable[[], bool], **handlers: Any) -> ActivityWorker:
    worker = ActivityWorker(hub, concurrency=2, idle_poll_ms=1, max_attempts=3)
    for name, handler in handlers.items():
        worker.register(name, handler)
    with worker:
        wait_until(done, timeout_s=10, interval_s=0.005)
    return worker


def variant(completion: JsonObject | None) -> str:
    assert completion is not None
    return next(iter(completion))


def test_results_failures_and_poison_are_acked_as_completions() -> None:
    hub = FakeHub()
    ok = hub.add("Double", 21, activity_id=1)
    boom = hub.add("Explode", None, activity_id=2)
    poison = hub.add("Double", 1, activity_id=3, attempt=4)

    def double(ctx: ActivityContext, value: int) -> int:
        return value * 2

    def explode(ctx: ActivityContext, value: None) -> None:
        raise RuntimeError("boom")

    worker = run_until(hub, lambda: len(hub.acked) == 3, Double=double, Explode=explode)

    assert hub.acked[ok] == {
        "ActivityCompleted": {"instance": "i", "execution_id": 1, "id": 1, "result": "42"}
    }
    assert variant(hub.acked[boom]) == "ActivityFailed"
    assert "boom" in json.dumps(hub.acked[boom])
    assert variant(hub.acked[poison]) == "ActivityFailed"
    assert worker.stats.completed == 1 and worker.stats.failed == 1 and worker.stats.poisoned == 1


def test_an_activity_nobody_registered_is_given_back_not_failed() -> None:
    hub = FakeHub()
    token = hub.add("Unknown", None, activity_id=7)
    run_until(hub, lambda: bool(hub.abandoned))
    assert hub.abandoned == [token] and token not in hub.acked
