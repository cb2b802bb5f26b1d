"""The worker loop and its lease keeper: the lock timeout detects crashes, it
no longer caps how long an activity may run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    external_raised,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import (
    ActivityContext,
    ActivityWorker,
    LockLost,
    TagFilter,
    TaskHub,
    keep_orchestration_lease,
    now_ms,
)
from tests.support.db import SERVER_NOW_MS
from tests.support.db import orchestrator_items as completions
from tests.support.paths import REPO
from tests.support.worker_process import RUNS_TABLE, sleep_activity

# Asserts margins of wall-clock time: run alone, after the parallel part of the suite.
pytestmark = pytest.mark.timing

HubFactory = Callable[..., TaskHub]


def sleep_item(instance: str, activity_id: int, seconds: float) -> dict[str, Any]:
    item = activity_execute(instance, activity_id, name="Sleep")
    item["ActivityExecute"]["input"] = json.dumps(seconds)
    return item


@pytest.fixture
def runs_schema(hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    sql.execute(RUNS_TABLE.format(schema=hub_schema))
    return hub_schema


def runs(sql: psycopg.Connection[Any], schema: str) -> list[dict[str, Any]]:
    cur = sql.execute(f'SELECT * FROM "{schema}".activity_runs ORDER BY started_ms')
    names = [column.name for column in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


@pytest.fixture
def worker_process(database_url: str) -> Iterator[Callable[[str, int], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(schema: str, lock_timeout_ms: int) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.worker_process",
                database_url,
                schema,
                str(lock_timeout_ms),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.kill()
        process.wait()


def test_activity_three_times_longer_than_its_lock_completes_once_without_lapsing(
    runs_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(runs_schema, worker_lock_timeout_ms=1_000)
    hub.enqueue_worker_work(sleep_item("long", 1, 3.0))
    workers = [ActivityWorker(hub, concurrency=1, idle_poll_ms=10) for _ in range(2)]
    for worker in workers:
        worker.register("Sleep", sleep_activity(database_url, runs_schema))

    least_remaining: list[int] = []
    watching = threading.Event()

    def watch_lease() -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            while not watching.wait(0.02):  # the sampling rate: the > 50 samples below count on it
                row = conn.execute(
                    f'SELECT min(locked_until - {SERVER_NOW_MS}) FROM "{runs_schema}".worker_queue'
                    " WHERE lock_token IS NOT NULL"
                ).fetchone()
                if row and row[0] is not None:
                    least_remaining.append(int(row[0]))

    watcher = threading.Thread(target=watch_lease)
    watcher.start()
    for worker in workers:
        worker.start()
    try:
        wait_until(lambda: completions(sql, runs_schema), timeout_s=15)
    finally:
        watching.set()
        watcher.join()
        for worker in workers:
            worker.stop()

    assert [run["attempt"] for run in runs(sql, runs_schema)] == [1]
    assert completions(sql, runs_schema) == [activity_completed("long", 1, '"slept 3.0 s"')]
    assert len(least_remaining) > 50 and min(least_remaining) > 0
    assert sum(worker.stats.renewals for worker in workers) >= 6


def test_crashed_worker_item_returns_after_one_lock_timeout(
    runs_schema: str,
    make_hub: HubFactory,
    database_url: str,
    sql: psycopg.Connection[Any],
    worker_process: Callable[[str, int], subprocess.Popen[str]],
) -> None:
    hub = make_hub(runs_schema)
    hub.enqueue_worker_work(sleep_item("crash", 1, 30.0))
    crashed = worker_process(runs_schema, 1_000)
    wait_until(lambda: runs(sql, runs_schema))

    crashed.kill()  # SIGKILL mid-activity: no abandon, no goodbye
    crashed.wait()
    killed_at = now_ms()
    survivor = ActivityWorker(hub, concurrency=1, idle_poll_ms=10, lock_timeout_ms=1_000)
    survivor.register("Sleep", lambda ctx, _: sleep_activity(database_url, runs_schema)(ctx, 0.1))
    with survivor:
        second = wait_until(lambda: runs(sql, runs_schema)[1:], timeout_s=10)[0]
        wait_until(lambda: completions(sql, runs_schema))

    recovery_ms = second["started_ms"] - killed_at
    print(f"crash recovery: {recovery_ms} ms with a 1000 ms lock (activity would take 30 s)")
    assert second["attempt"] == 2
    assert recovery_ms < 2_500  # about one lock timeout, not the activity's 30 s


def test_renewal_survives_killed_connections_without_cancelling_the_work(
    runs_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(runs_schema, worker_lock_timeout_ms=1_500, application_name="renewing-worker")
    hub.enqueue_worker_work(sleep_item("conn-kill", 1, 3.0))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Sleep", sleep_activity(database_url, runs_schema))
    with worker:
        wait_until(lambda: runs(sql, runs_schema))
        for _ in range(3):
            time.sleep(0.5)  # spreads the kills over the activity's 3 s
            sql.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'renewing-worker'"
            )
        wait_until(lambda: completions(sql, runs_schema), timeout_s=15)

    (run,) = runs(sql, runs_schema)
    assert run["finished_ms"] is not None and run["cancelled_ms"] is None
    assert worker.stats.completed == 1 and worker.stats.lost == 0


def test_stolen_lease_cancels_the_frozen_worker_and_refuses_its_ack(
    runs_schema: str,
    make_hub: HubFactory,
    sql: psycopg.Connection[Any],
    worker_process: Callable[[str, int], subprocess.Popen[str]],
) -> None:
    lock_ms = 1_500
    hub = make_hub(runs_schema)
    hub.enqueue_worker_work(sleep_item("frozen", 1, 30.0))
    frozen = worker_process(runs_schema, lock_ms)
    (first,) = wait_until(lambda: runs(sql, runs_schema))

    os.kill(frozen.pid, signal.SIGSTOP)  # a long GC pause, a stalled VM
    time.sleep(lock_ms / 1000 + 0.3)  # past the lease's end: its keeper is frozen too
    thief = hub.fetch_work_item(30_000, tags=TagFilter.any())
    assert thief is not None and thief.attempt_count == 2
    resumed_at = now_ms()
    os.kill(frozen.pid, signal.SIGCONT)

    cancelled = wait_until(lambda: runs(sql, runs_schema)[0]["cancelled_ms"], timeout_s=5)
    print(f"stolen lease: work cancelled {cancelled - resumed_at} ms after the worker resumed")
    assert cancelled - resumed_at <= lock_ms // 3
    with pytest.raises(LockLost):
        hub.ack_work_item(first["lock_token"], activity_completed("frozen", 1, '"late"'))
    hub.ack_work_item(thief.lock_token, activity_completed("frozen", 1, '"thief"'))
    assert completions(sql, runs_schema) == [activity_completed("frozen", 1, '"thief"')]


def test_cancelled_activity_stops_within_a_third_of_the_lock_timeout(
    runs_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    lock_ms = 1_500
    hub = make_hub(runs_schema, worker_lock_timeout_ms=lock_ms)
    hub.enqueue_orchestrator_work("cancelled", start_orchestration("cancelled"))
    turn = hub.fetch_orchestration_item()
    assert turn is not None
    hub.ack_orchestration_item(
        turn.lock_token,
        1,
        history_delta=[orchestration_started("cancelled")],
        worker_items=[sleep_item("cancelled", 2, 30.0)],
        metadata=metadata(),
    )
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Sleep", sleep_activity(database_url, runs_schema))
    with worker:
        wait_until(lambda: runs(sql, runs_schema))
        hub.enqueue_orchestrator_work("cancelled", external_raised("cancelled"))
        turn = hub.fetch_orchestration_item()
        assert turn is not None
        cancelled_at = now_ms()
        hub.ack_orchestration_item(
            turn.lock_token,
            1,
            cancelled_activities=[{"instance": "cancelled", "execution_id": 1, "activity_id": 2}],
        )
        cancelled = wait_until(lambda: runs(sql, runs_schema)[0]["cancelled_ms"], timeout_s=5)
        # The handler has returned; the worker counts the item as lost next.
        # Stopping before that (as a loaded machine once did) gives it back.
        wait_until(lambda: worker.stats.lost == 1, timeout_s=5)

    assert cancelled - cancelled_at <= lock_ms // 3 + 100
    assert worker.stats.lost == 1 and worker.stats.completed == 0
    assert completions(sql, runs_schema) == []


def test_poison_items_are_failed_not_run(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    hub.enqueue_worker_work(activity_execute("poisoned", 1, name="Explode"))
    sql.execute(f'UPDATE "{hub_schema}".worker_queue SET attempt_count = 3')
    calls: list[int] = []
    worker = ActivityWorker(hub, concurrency=1, max_attempts=3, idle_poll_ms=10)
    worker.register("Explode", lambda ctx, _: calls.append(1))
    with worker:
        (failed,) = wait_until(lambda: completions(sql, hub_schema))

    assert calls == []
    details = failed["ActivityFailed"]["details"]["Poison"]
    assert details["attempt_count"] == 4 and details["max_attempts"] == 3
    assert worker.stats.poisoned == 1


def test_graceful_shutdown_gives_in_flight_items_back_at_once(
    runs_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(runs_schema)
    hub.enqueue_worker_work(sleep_item("shutdown", 1, 30.0))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Sleep", sleep_activity(database_url, runs_schema))
    worker.start()
    wait_until(lambda: runs(sql, runs_schema))

    started = time.monotonic()
    worker.stop()
    assert time.monotonic() - started < 2
    again = hub.fetch_work_item(30_000)
    assert again is not None and again.attempt_count == 1  # the shutdown did not count
    assert runs(sql, runs_schema)[0]["cancelled_ms"] is not None
    assert worker.stats.given_back == 1


def test_async_handlers_complete_and_are_cancelled_as_tasks(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    cancelled = threading.Event()

    async def slow(ctx: ActivityContext, seconds: float) -> str:
        try:
            await asyncio.sleep(seconds)  # stands for the work
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "done"

    hub.enqueue_worker_work(sleep_item("async", 1, 0.05))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Sleep", slow)
    with worker:
        wait_until(lambda: completions(sql, hub_schema))
        assert completions(sql, hub_schema) == [activity_completed("async", 1, '"done"')]
        hub.enqueue_worker_work(sleep_item("async", 2, 30.0))
        wait_until(lambda: worker._in_flight)
    assert cancelled.wait(2)  # stop() cancelled the task


def test_orchestration_turn_longer_than_its_lock_keeps_its_lease(hub: TaskHub) -> None:
    hub.enqueue_orchestrator_work("slow-turn", start_orchestration("slow-turn"))
    leased_at = time.monotonic()
    item = hub.fetch_orchestration_item(600)
    assert item is not None
    with keep_orchestration_lease(hub, item.lock_token, 600, leased_at=leased_at) as keeper:
        time.sleep(1.8)  # the turn: three times its 600 ms lock
    assert not keeper.lost and keeper.renewals >= 4
    hub.ack_orchestration_item(
        item.lock_token, 1, history_delta=[orchestration_started("slow-turn")], metadata=metadata()
    )
