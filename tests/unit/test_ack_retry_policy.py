"""The workers' one ack retry policy (WorkerCore.ack_retry_delay_s), the
item flow's ack following it (as a pure generator), and both workers
performing it: a transient error is retried, after a back-off doubling
from 50 ms, up to ACK_ATTEMPTS attempts in all; a permanent error is not
retried; a lost lease is never retried and is counted as lost. The
back-off is recorded, not waited for."""

from __future__ import annotations

import asyncio
import logging
import time
import types
from collections.abc import Callable
from typing import Any

import pytest

from devkit.waiting import wait_until_async
from provider import (
    ActivityWorker,
    AsyncActivityWorker,
    LockLost,
    PermanentError,
    RetryableError,
    TaskHubError,
)
from provider.types import WorkItemLease
from provider.worker import activity_worker
from provider.worker.activity_item import ActivityItem
from provider.worker.core import ACK_ATTEMPTS, ACK_BACKOFF, WorkerOptions
from provider.worker.item_flow import Ack, Pause, ack
from tests.unit.fakes import AsyncRecordingHub, RecordingHub
from tests.unit.flow_script import Row, play

COMPLETION = {"ActivityCompleted": {"instance": "i", "execution_id": 1, "id": 1, "result": "1"}}


def transient() -> RetryableError:
    return RetryableError("ack_work_item", "connection lost", "08006")


def lost() -> LockLost:
    return LockLost("ack_work_item", "no live lease", "TH001")


def backed_off(pauses: list[float], failures: int) -> bool:
    """One pause after each of `failures` failures, each within its jitter."""
    ceilings = [ACK_BACKOFF.ceiling_s(n) for n in range(1, failures + 1)]
    return len(pauses) == failures and all(
        c / 2 <= pause <= c for pause, c in zip(pauses, ceilings, strict=True)
    )


def leased(hub: RecordingHub) -> WorkItemLease:
    hub.add("Echo", 1, activity_id=1)
    return hub.queued.pop()


def test_the_back_off_doubles_from_50_ms() -> None:
    assert [ACK_BACKOFF.ceiling_s(failures) for failures in range(1, 5)] == [0.05, 0.1, 0.2, 0.4]
    assert ACK_ATTEMPTS == 3


def test_a_transient_error_is_retried_until_the_last_attempt() -> None:
    hub = RecordingHub()
    worker, lease = ActivityWorker(hub), leased(hub)
    delays = [
        worker.ack_retry_delay_s(ActivityItem.fetched(lease), transient(), n)
        for n in range(ACK_ATTEMPTS)
    ]
    assert delays[2] is None
    for failures, delay in enumerate(delays[:2], start=1):  # with jitter: never in step
        ceiling = ACK_BACKOFF.ceiling_s(failures)
        assert delay is not None and ceiling / 2 <= delay <= ceiling
    assert worker.stats.lost == 0


@pytest.mark.parametrize(
    "error",
    [PermanentError("ack_work_item", "bad completion", "22023"), TaskHubError("ack", "?")],
    ids=["permanent", "unclassified"],
)
def test_an_error_that_is_not_transient_is_not_retried(
    error: TaskHubError, caplog: pytest.LogCaptureFixture
) -> None:
    hub = RecordingHub()
    worker, lease = ActivityWorker(hub), leased(hub)
    assert worker.ack_retry_delay_s(ActivityItem.fetched(lease), error, 0) is None
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and getattr(record, "event", None) == "worker.ack_failed"
    assert worker.stats.lost == 0


def test_a_lost_lease_is_never_retried_and_is_logged_with_the_items_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub = RecordingHub()
    worker, lease = ActivityWorker(hub), leased(hub)
    assert worker.ack_retry_delay_s(ActivityItem.fetched(lease), lost(), 0) is None
    assert worker.stats.lost == 1
    (record,) = caplog.records
    assert getattr(record, "event", None) == "worker.ack_refused"
    assert getattr(record, "lock_token", None) == lease.lock_token
    assert getattr(record, "sqlstate", None) == "TH001"


# -- the policy in the flow (provider/worker/item_flow.py's ack) -----------------------


def pause_after(failures: int) -> Callable[[Any], bool]:
    ceiling = ACK_BACKOFF.ceiling_s(failures)
    return lambda step: isinstance(step, Pause) and ceiling / 2 <= step.seconds <= ceiling


ACK = Ack(COMPLETION)
ACKS: dict[str, tuple[list[Row], bool, int]] = {  # script, acked, counted lost
    "acked at once": ([(ACK, None)], True, 0),
    "acked on a retry": (
        [
            (ACK, transient()),
            (pause_after(1), None),
            (ACK, transient()),
            (pause_after(2), None),
            (ACK, None),
        ],
        True,
        0,
    ),
    "given up after ACK_ATTEMPTS transient errors": (
        [
            (ACK, transient()),
            (pause_after(1), None),
            (ACK, transient()),
            (pause_after(2), None),
            (ACK, transient()),
        ],
        False,
        0,
    ),
    "a lost lease: one attempt": ([(ACK, lost())], False, 1),
    "a permanent error: one attempt": (
        [(ACK, PermanentError("ack_work_item", "bad completion", "22023"))],
        False,
        0,
    ),
}


@pytest.mark.parametrize(("script", "acked", "lost_leases"), ACKS.values(), ids=ACKS)
def test_the_ack_flow(script: list[Row], acked: bool, lost_leases: int) -> None:
    hub = RecordingHub()
    worker, lease = ActivityWorker(hub), leased(hub)
    assert play(ack(worker, ActivityItem.fetched(lease), COMPLETION), script) is acked
    assert worker.stats.lost == lost_leases


# -- each face performing it ------------------------------------------------------------


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The threaded worker's pauses between ack attempts, recorded instead of slept."""
    slept: list[float] = []
    clock = types.SimpleNamespace(sleep=slept.append, monotonic=time.monotonic)
    monkeypatch.setattr(activity_worker, "time", clock)
    return slept


@pytest.fixture
def async_pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The asyncio worker's pauses between ack attempts (the sleeps of its
    slot tasks), recorded instead of slept; any other task sleeps as asked."""
    slept: list[float] = []
    sleep = asyncio.sleep

    async def recorded(seconds: float, result: Any = None) -> Any:
        task = asyncio.current_task()
        if task is not None and task.get_name().startswith("activity-slot"):
            slept.append(seconds)
            seconds = 0
        return await sleep(seconds, result)

    monkeypatch.setattr(asyncio, "sleep", recorded)
    return slept


ONE_POLLING_SLOT: WorkerOptions = {
    "concurrency": 1,
    "idle_poll_ms": 1,
    "max_idle_poll_ms": 5,
    "push_wakeups": False,
}


def served_by_threads(hub: RecordingHub) -> ActivityWorker:
    """A threaded worker runs one Echo item, until its slot fetches again."""
    hub.add("Echo", 1, activity_id=1)
    worker = ActivityWorker(hub, **ONE_POLLING_SLOT)
    worker.register("Echo", lambda ctx, value: value)
    with worker:
        assert hub.wait_for(lambda: len(hub.fetches) >= 2)  # done with the item
    return worker


def served_by_asyncio(hub: AsyncRecordingHub) -> AsyncActivityWorker:
    """An asyncio worker runs one Echo item, until its slot fetches again."""
    hub.fake.add("Echo", 1, activity_id=1)

    async def main() -> AsyncActivityWorker:
        worker = AsyncActivityWorker(hub, **ONE_POLLING_SLOT)
        worker.register("Echo", lambda ctx, value: value)
        async with worker:
            await wait_until_async(lambda: len(hub.fake.fetches) >= 2, timeout_s=5)
        return worker

    return asyncio.run(main())


def test_the_threaded_worker_gives_up_after_ack_attempts_transient_errors(
    pauses: list[float],
) -> None:
    hub = RecordingHub(ack_errors=[transient() for _ in range(ACK_ATTEMPTS)])
    worker = served_by_threads(hub)
    assert hub.ack_attempts == ["lock_1"] * ACK_ATTEMPTS and backed_off(pauses, 2)
    assert hub.acked == {} and worker.stats.completed == 0


def test_the_threaded_worker_acks_a_lost_lease_once(pauses: list[float]) -> None:
    hub = RecordingHub(ack_errors=[lost(), transient()])
    worker = served_by_threads(hub)
    assert hub.ack_attempts == ["lock_1"] and pauses == [] and worker.stats.lost == 1


def test_the_asyncio_worker_gives_up_after_ack_attempts_transient_errors(
    async_pauses: list[float],
) -> None:
    hub = AsyncRecordingHub(RecordingHub(ack_errors=[transient() for _ in range(ACK_ATTEMPTS)]))
    worker = served_by_asyncio(hub)
    assert hub.fake.ack_attempts == ["lock_1"] * ACK_ATTEMPTS and backed_off(async_pauses, 2)
    assert hub.fake.acked == {} and worker.stats.completed == 0


def test_the_asyncio_worker_acks_a_lost_lease_once(async_pauses: list[float]) -> None:
    hub = AsyncRecordingHub(RecordingHub(ack_errors=[lost(), transient()]))
    worker = served_by_asyncio(hub)
    assert hub.fake.ack_attempts == ["lock_1"] and async_pauses == []
    assert worker.stats.lost == 1
