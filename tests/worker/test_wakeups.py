"""Push wakeups: an idle worker starts new work at once instead of at its next
poll, the procedures notify only while a listener waits, the workers of a
process share one listening connection, and a listener whose connection dies
listens again."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until, wait_until_async
from devkit.workloads.work_items import activity_execute, start_orchestration
from provider import (
    ActivityContext,
    ActivityWorker,
    AsyncActivityWorker,
    AsyncTaskHub,
    TagFilter,
    TaskHub,
    TaskHubError,
)
from provider.client.call_observers import add_call_observer, remove_call_observer

HubFactory = Callable[..., TaskHub]
SLOW_POLL_MS = 2_500  # so that only a wakeup can start the work within a second


def notifications(conn: psycopg.Connection[Any]) -> list[str]:
    return [n.payload for n in conn.notifies(timeout=0.3)]


class Fetches:
    """How many work-item fetches on one schema have returned (a call observer)."""

    def __init__(self, schema: str) -> None:
        self.schema, self.count = schema, 0
        self._lock = threading.Lock()  # the slots' threads report their own calls

    def __call__(
        self, schema: str, operation: str, seconds: float, failure: TaskHubError | None
    ) -> None:
        if schema == self.schema and operation == "fetch_work_item":
            with self._lock:
                self.count += 1


@contextmanager
def counting_fetches(schema: str) -> Iterator[Fetches]:
    fetches = Fetches(schema)
    add_call_observer(fetches)
    try:
        yield fetches
    finally:
        remove_call_observer(fetches)


def waiting_listeners(sql: psycopg.Connection[Any], schema: str) -> list[int]:
    """The pids of the listeners the server knows to wait for a notification."""
    rows = sql.execute(
        f'SELECT pid FROM "{schema}".taskhub_wakeup_listeners WHERE waiting'
    ).fetchall()
    return [int(pid) for (pid,) in rows]


def idle(fetches: Fetches, slots: int, sql: psycopg.Connection[Any], push: bool) -> bool:
    """Every slot fetched and found nothing (so sleeps through its poll), and with
    push wakeups the server knows that the listener waits."""
    return fetches.count >= slots and (not push or bool(waiting_listeners(sql, fetches.schema)))


def started_within(
    worker: ActivityWorker,
    started: threading.Event,
    enqueue: Callable[[], None],
    sql: psycopg.Connection[Any],
    push: bool,
) -> float:
    with counting_fetches(worker.hub.config.schema) as fetches, worker:
        wait_until(lambda: idle(fetches, worker.concurrency, sql, push), message="every slot idle")
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
    push: bool, hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
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
        worker,
        started,
        lambda: hub.enqueue_worker_work(activity_execute("w", 1, name="Go")),
        sql,
        push,
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
        killed = wait_until(lambda: waiting_listeners(sql, hub_schema), message="a listener")
        sql.execute(
            f'SELECT pg_terminate_backend(pid) FROM "{hub_schema}".taskhub_wakeup_listeners'
        )
        # It backs off, opens a new connection, registers again, and waits.
        wait_until(
            lambda: (pids := waiting_listeners(sql, hub_schema)) and not set(pids) & set(killed),
            message="a new listener waiting",
        )
        assert len(waiting_listeners(sql, hub_schema)) == 1
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
        wait_until(lambda: worker.stats.completed, timeout_s=5, message="the ack")
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
            slots = worker.concurrency + sum(w.concurrency for w in threaded)
            async with worker:
                await wait_until_async(
                    lambda: idle(fetches, slots, sql, push=True),
                    message="every slot of the three workers idle",
                )
                assert listening_backends(sql, hub_schema) == 1
                sent = time.monotonic()
                await asyncio.to_thread(enqueue_one_for_each)
                await wait_until_async(
                    lambda: len(started) == 3,
                    timeout_s=2 * SLOW_POLL_MS / 1000,
                    interval_s=0.01,
                    message="all three started",
                )
                return sent

    def enqueue_one_for_each() -> None:
        for n in range(2):
            hub.enqueue_worker_work(activity_execute("s", n, name=f"T{n}", tag=f"t{n}"))
        hub.enqueue_worker_work(activity_execute("s", 9, name="A", tag="a"))

    with counting_fetches(hub_schema) as fetches:
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
    wait_until(
        lambda: listening_backends(sql, hub_schema) == 0,
        timeout_s=2,
        interval_s=0.05,
        message="the last worker to close the listening connection",
    )
