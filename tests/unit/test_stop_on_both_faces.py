"""Both workers do the same on stop (provider/worker/item_flow.py): an item
whose fetch was under way when stop() came in is given back unrun, its
attempt not counted, on the threaded face as on the asyncio one. (The
threaded worker used to run it: the stop then waited for a whole handler.)"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from provider import ActivityContext, ActivityWorker, AsyncActivityWorker, TagFilter
from provider.types import WorkItemLease
from tests.unit.fakes import Abandon, AsyncRecordingHub, RecordingHub

GATE_S = 10.0  # how long a held fetch waits at most for the test to let it go


class HeldFetchHub(RecordingHub):
    """Its first fetch holds its answer until `let_go` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.in_fetch = threading.Event()
        self.let_go = threading.Event()

    def fetch_work_item(self, *args: Any, **kwargs: Any) -> WorkItemLease | None:
        if not self.in_fetch.is_set():
            self.in_fetch.set()
            assert self.let_go.wait(GATE_S)
        return super().fetch_work_item(*args, **kwargs)


class AsyncHeldFetchHub(AsyncRecordingHub):
    """Its first fetch awaits `let_go` before it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.in_fetch = asyncio.Event()
        self.let_go = asyncio.Event()

    async def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None:
        if not self.in_fetch.is_set():
            self.in_fetch.set()
            await asyncio.wait_for(self.let_go.wait(), GATE_S)
        return await super().fetch_work_item(
            lock_timeout_ms,
            owner_id=owner_id,
            session_lock_timeout_ms=session_lock_timeout_ms,
            tags=tags,
        )


def never_runs(ran: list[str]) -> Any:
    def handler(ctx: ActivityContext, value: str) -> str:
        ran.append(value)
        return value

    return handler


def test_the_threaded_worker_gives_back_an_item_fetched_during_stop() -> None:
    hub, ran = HeldFetchHub(), list[str]()
    token = hub.add("Echo", "late", activity_id=1)
    worker = ActivityWorker(hub, concurrency=1, push_wakeups=False)
    worker.register("Echo", never_runs(ran))
    worker.start()
    assert hub.in_fetch.wait(GATE_S)
    worker.stop(timeout_s=0)  # the fetch is still under way: stop returns at once
    hub.let_go.set()
    assert hub.wait_for(lambda: bool(hub.abandons))
    assert hub.abandons == [Abandon(token, None, ignore_attempt=True)]
    assert ran == [] and hub.ack_attempts == []
    assert worker.stats.given_back == 1 and worker.stats.started == 0


def test_the_asyncio_worker_gives_back_an_item_fetched_during_stop() -> None:
    hub, ran = AsyncHeldFetchHub(), list[str]()
    token = hub.fake.add("Echo", "late", activity_id=1)
    worker = AsyncActivityWorker(hub, concurrency=1, push_wakeups=False)
    worker.register("Echo", never_runs(ran))

    async def scenario() -> None:
        serving = asyncio.create_task(worker.run())
        await asyncio.wait_for(hub.in_fetch.wait(), GATE_S)
        await worker.stop()
        hub.let_go.set()
        await asyncio.wait_for(serving, GATE_S)

    asyncio.run(scenario())
    assert hub.fake.abandons == [Abandon(token, None, ignore_attempt=True)]
    assert ran == [] and hub.fake.ack_attempts == []
    assert worker.stats.given_back == 1 and worker.stats.started == 0
