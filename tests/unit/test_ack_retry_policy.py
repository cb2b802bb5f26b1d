"""The workers' one ack retry policy (WorkerCore._ack_retry_delay_s), and
both workers' ack loops following it: a transient error is retried, after
a back-off doubling from 50 ms, up to ACK_ATTEMPTS attempts in all; a
permanent error is not retried; a lost lease is never retried and is
counted as lost. The back-off is recorded, not waited for."""

from __future__ import annotations

import asyncio
import logging
import time
import types

import pytest

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
from provider.worker.core import ACK_ATTEMPTS, ACK_BACKOFF
from tests.unit.fakes import AsyncRecordingHub, RecordingHub

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


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The threaded worker's pauses between ack attempts, recorded instead of slept."""
    slept: list[float] = []
    clock = types.SimpleNamespace(sleep=slept.append, monotonic=time.monotonic)
    monkeypatch.setattr(activity_worker, "time", clock)
    return slept


def test_the_threaded_ack_gives_up_after_ack_attempts_transient_errors(
    pauses: list[float],
) -> None:
    hub = RecordingHub(ack_errors=[transient() for _ in range(ACK_ATTEMPTS + 1)])
    worker, lease = ActivityWorker(hub), leased(hub)
    assert worker._ack(lease, COMPLETION) is False
    assert len(hub.ack_attempts) == ACK_ATTEMPTS and backed_off(pauses, 2)


def test_the_threaded_ack_succeeds_on_a_retry(pauses: list[float]) -> None:
    hub = RecordingHub(ack_errors=[transient(), transient()])
    worker, lease = ActivityWorker(hub), leased(hub)
    assert worker._ack(lease, COMPLETION) is True
    assert hub.acked == {lease.lock_token: COMPLETION} and backed_off(pauses, 2)


def test_the_threaded_ack_of_a_lost_lease_is_one_attempt(pauses: list[float]) -> None:
    hub = RecordingHub(ack_errors=[lost(), transient()])
    worker, lease = ActivityWorker(hub), leased(hub)
    assert worker._ack(lease, COMPLETION) is False
    assert len(hub.ack_attempts) == 1 and pauses == [] and worker.stats.lost == 1


def asyncio_ack(
    errors: list[Exception], monkeypatch: pytest.MonkeyPatch
) -> tuple[bool, AsyncRecordingHub, AsyncActivityWorker, list[float]]:
    """AsyncActivityWorker._ack against scripted errors; its pauses recorded."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    hub = AsyncRecordingHub(RecordingHub(ack_errors=errors))
    lease = leased(hub.fake)
    worker = AsyncActivityWorker(hub)
    monkeypatch.setattr(asyncio, "sleep", sleep)
    done = asyncio.run(worker._ack(lease, COMPLETION))
    return done, hub, worker, slept


def test_the_asyncio_ack_follows_the_same_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    done, hub, _, slept = asyncio_ack([transient() for _ in range(5)], monkeypatch)
    assert done is False and len(hub.fake.ack_attempts) == ACK_ATTEMPTS
    assert backed_off(slept, 2)
    done, hub, _, slept = asyncio_ack([transient()], monkeypatch)
    assert done is True and len(hub.fake.ack_attempts) == 2 and backed_off(slept, 1)


def test_the_asyncio_ack_of_a_lost_lease_is_one_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    done, hub, worker, slept = asyncio_ack([lost()], monkeypatch)
    assert done is False and len(hub.fake.ack_attempts) == 1 and slept == []
    assert worker.stats.lost == 1
