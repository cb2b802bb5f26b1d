"""A worker that runs for a long time keeps its size: thousands of
activities (completed, failed by raising, failed by a result no JSON can
hold) leave no objects, threads or connections behind once the first
thousand have warmed it up."""

from __future__ import annotations

import gc
import threading
from typing import Any

import psycopg

from provider import ActivityContext, ActivityWorker, TaskHub
from tests.support.waiting import wait_until
from tests.support.work_items import activity_execute

WARM_UP = 1_000
MORE = 4_000
# Allocator pools and caches fill in the warm-up; what is left after it is a
# leak when it grows with the number of activities (one object per activity
# would be 4,000 here).
OBJECTS_GROWTH_AT_MOST = 1_500


def live_objects() -> int:
    gc.collect()
    return len(gc.get_objects())


def hub_connections(sql: psycopg.Connection[Any], application_name: str) -> int:
    row = sql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application_name]
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_thousands_of_activities_leave_the_worker_as_it_was_after_the_first_thousand(
    hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    worker = ActivityWorker(hub, concurrency=4, idle_poll_ms=5, push_wakeups=False)

    @worker.activity("Ok")
    def ok(ctx: ActivityContext, _: Any) -> dict[str, int]:
        return {"activity": ctx.activity_id}

    @worker.activity("Raises")
    def raises(ctx: ActivityContext, _: Any) -> None:
        raise RuntimeError(f"activity {ctx.activity_id} failed")

    @worker.activity("Unstorable")
    def unstorable(ctx: ActivityContext, _: Any) -> object:
        return object()  # no JSON holds it: the activity fails

    names = ("Ok", "Raises", "Unstorable", "Ok")

    def enqueue(first: int, count: int) -> None:
        for n in range(first, first + count):
            hub.enqueue_worker_work(activity_execute(f"long-{n}", 1, name=names[n % len(names)]))

    def handled() -> int:
        return worker.stats.completed + worker.stats.failed

    with worker:
        enqueue(0, WARM_UP)
        wait_until(lambda: handled() == WARM_UP, timeout_s=120, message="the warm-up to run")
        objects, threads = live_objects(), threading.active_count()
        connections = hub_connections(sql, hub.config.application_name)

        enqueue(WARM_UP, MORE)
        wait_until(lambda: handled() == WARM_UP + MORE, timeout_s=300, message="the rest to run")
        grown = live_objects() - objects
        print(f"after {WARM_UP} activities {objects} live objects, {threads} threads,"
              f" {connections} connections; {MORE} more: {grown:+d} objects")  # fmt: skip
        assert threading.active_count() == threads
        assert hub_connections(sql, hub.config.application_name) <= max(
            connections, hub.config.pool_max_size
        )
        assert grown <= OBJECTS_GROWTH_AT_MOST, f"{grown} more live objects after {MORE} activities"
    stats = worker.stats
    assert stats.completed == (WARM_UP + MORE) // 2
    assert stats.failed == (WARM_UP + MORE) // 2
    assert stats.lost == 0
