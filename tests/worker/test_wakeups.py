"""Push wakeups: an idle worker starts new work at once instead of at its next
poll, the procedures notify only while a listener waits, the workers of a
process share one listening connection, and a listener whose connection dies
listens again."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from provider import (
    ActivityContext,
    ActivityWorker,
    AsyncActivityWorker,
    AsyncTaskHub,
    TagFilter,
    TaskHub,
)
from tests.support.work_items import activity_execute, start_orchestration

HubFactory = Callable[..., TaskHub]
SLOW_POLL_MS = 2_500  # so that only a wakeup can start the work within a second


def notifications(conn: psycopg.Connection[Any]) -> list[str]:
    return [n.payload for n in conn.notifies(timeout=0.3)]


def started_within(
    hub: TaskHub, worker: ActivityWorker, started: threading.Event, enqueue: Callable[[], None]
) -> float:
    with worker:
        time.sleep(0.5)  # every slot idle, waiting
        sent = time.monotonic()
        enqueue()
        assert started.wait(SLOW_POLL_MS / 1000 * 2)
        return time.monotonic() - sent


@pytest.mark.parametrize(
    "push",
    [True, pytest.param(False, marks=pytest.mark.xfail(strict=True, reason="polling only"))],
    ids=["push", "polling"],
)
def test_an_idle_worker_starts_new_work_at_once(
    push: bool, hub_schema: str, make_hub: HubFactory
) -> None:
    hub = make_hub(hub_schema)
    worker = ActivityWorker(
        hub, idle_poll_ms=SLOW_POLL_MS, max_idle_poll_ms=SLOW_POLL_MS, push_wakeups=push
    )
    started = threading.Event()

    @worker.activity("Go")
    def go(ctx: ActivityContext, _: Any) -> str:
        started.set()
        return "went"

    waited = started_within(
        hub, worker, started, lambda: hub.enqueue_worker_work(activity_execute("w", 1, name="Go"))
    )
    assert waited < 1.0, f"started {waited:.3f} s after it was queued"


def test_the_procedures_notify_a_waiting_listener_once(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(hub_schema)
    with psycopg.connect(database_url, autocommit=True) as listener:
        row = listener.execute(f'SELECT "{hub_schema}".taskhub_listen(%s)', ["worker"]).fetchone()
        assert row is not None
        listener.execute(f'LISTEN "{row[0]}"')
        pid = listener.info.backend_pid

        hub.enqueue_worker_work(activity_execute("n", 1))
        assert notifications(listener) == []  # registered, but not waiting

        # Woken once per wait: the first message clears the flag.
        hub.set_wakeup_waiting(pid, True)
        hub.enqueue_worker_work(activity_execute("n", 2, tag="gpu"))
        hub.enqueue_worker_work(activity_execute("n", 3))
        assert notifications(listener) == ["worker:gpu"]

        hub.set_wakeup_waiting(pid, True)
        hub.enqueue_orchestrator_work("n", start_orchestration("n"))  # nobody waits for these
        later = datetime.now(UTC) + timedelta(minutes=5)
        hub.enqueue_worker_work(activity_execute("n", 4))
        assert notifications(listener) == ["worker"]

        hub.set_wakeup_waiting(pid, True)
        hub.enqueue_orchestrator_work("n", {"TimerFired": {"instance": "n"}}, visible_at=later)
        hub.set_wakeup_waiting(pid, False)
        hub.enqueue_worker_work(activity_execute("n", 5))
        assert notifications(listener) == []


def test_a_listener_whose_connection_dies_listens_again(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    worker = ActivityWorker(
        hub, concurrency=1, idle_poll_ms=SLOW_POLL_MS, max_idle_poll_ms=SLOW_POLL_MS
    )
    started = threading.Event()

    @worker.activity("Go")
    def go(ctx: ActivityContext, _: Any) -> str:
        started.set()
        return "went"

    with worker:
        time.sleep(0.5)
        sql.execute(
            f'SELECT pg_terminate_backend(pid) FROM "{hub_schema}".taskhub_wakeup_listeners'
        )
        time.sleep(0.6)  # back off, open a new connection, register again
        listeners = sql.execute(
            f'SELECT count(*) FROM "{hub_schema}".taskhub_wakeup_listeners WHERE waiting'
        ).fetchone()
        assert listeners == (1,)
        sent = time.monotonic()
        hub.enqueue_worker_work(activity_execute("w", 1, name="Go"))
        assert started.wait(SLOW_POLL_MS / 1000 * 2)
        assert time.monotonic() - sent < 1.0


def test_a_worker_on_a_schema_without_wakeups_polls(
    database_url: str, make_hub: HubFactory
) -> None:
    from provider.deploy import migrate
    from tests.support.db import new_schema_name

    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0008")
    hub = make_hub(schema)
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10, max_idle_poll_ms=50)
    done = threading.Event()

    @worker.activity("Go")
    def go(ctx: ActivityContext, _: Any) -> str:
        done.set()
        return "went"

    with worker:
        hub.enqueue_worker_work(activity_execute("w", 1, name="Go"))
        assert done.wait(5)
        deadline = time.monotonic() + 5
        while worker.stats.completed == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert worker.stats.completed == 1


def listening_backends(sql: psycopg.Connection[Any], schema: str) -> int:
    """Connections registered as listeners of the schema that are still open."""
    row = sql.execute(
        f'SELECT count(*) FROM "{schema}".taskhub_wakeup_listeners AS l'
        " JOIN pg_stat_activity AS a USING (pid)"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_workers_of_a_process_share_one_listening_connection(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    started: dict[str, float] = {}

    def handler(name: str) -> Callable[[ActivityContext, Any], None]:
        def run(ctx: ActivityContext, _: Any) -> None:
            started[name] = time.monotonic()

        return run

    threaded = [
        ActivityWorker(
            hub,
            tags=TagFilter.only(f"t{n}"),
            idle_poll_ms=SLOW_POLL_MS,
            max_idle_poll_ms=SLOW_POLL_MS,
        )
        for n in range(2)
    ]
    for n, worker in enumerate(threaded):
        worker.register(f"T{n}", handler(f"T{n}"))

    async def main() -> float:
        async with AsyncTaskHub.connect(database_url, hub_schema) as async_hub:
            worker = AsyncActivityWorker(
                async_hub,
                tags=TagFilter.only("a"),
                idle_poll_ms=SLOW_POLL_MS,
                max_idle_poll_ms=SLOW_POLL_MS,
            )
            worker.register("A", handler("A"))
            async with worker:
                await asyncio.sleep(0.6)  # every slot of the three workers idle
                assert listening_backends(sql, hub_schema) == 1
                sent = time.monotonic()
                await asyncio.to_thread(enqueue_one_for_each)
                while len(started) < 3 and time.monotonic() - sent < 2 * SLOW_POLL_MS / 1000:
                    await asyncio.sleep(0.01)
                return sent

    def enqueue_one_for_each() -> None:
        for n in range(2):
            hub.enqueue_worker_work(activity_execute("s", n, name=f"T{n}", tag=f"t{n}"))
        hub.enqueue_worker_work(activity_execute("s", 9, name="A", tag="a"))

    for worker in threaded:
        worker.start()
    try:
        sent = asyncio.run(main())
    finally:
        for worker in threaded:
            worker.stop()
    assert sorted(started) == ["A", "T0", "T1"]
    # Each was woken by the one connection, well before its 2.5 s poll.
    assert max(started.values()) - sent < 1.0, started
    deadline = time.monotonic() + 2
    while listening_backends(sql, hub_schema) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listening_backends(sql, hub_schema) == 0  # the last worker closed it
