"""A worker that runs for a long time keeps its size: thousands of
activities (completed, failed by raising, failed by a result no JSON can
hold) leave no objects, threads or connections behind once the first
thousand have warmed it up."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg

from devkit.waiting import wait_until
from devkit.workloads.work_items import activity_execute
from provider import ActivityContext, ActivityWorker, TaskHub

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


KEPT_S = 0.45  # longer than the lease below: renewed on the way
LEASE_MS = 400
ROUNDS = 3  # each: a batch of items, then a stop that gives back what runs
ROUND_ITEMS = 400
# After the first round: growth between the second round and the last must
# not follow the items (100 kept and 100 lost leases a round).
ROUND_GROWTH_AT_MOST = 250


def test_leases_kept_lost_and_given_back_leave_no_threads_connections_or_objects(
    hub_schema: str,
    database_url: str,
    make_hub: Callable[..., TaskHub],
    sql: psycopg.Connection[Any],
) -> None:
    """Handlers that outlive their lease (renewed), items whose lease is lost
    under them (deleted, as a cancellation deletes them), and stops that give
    the running items back, round after round, through one worker object.
    The pool has room for every slot and its renewals: this test is about
    what stays behind, not about a starved pool."""
    hub = make_hub(hub_schema, pool_max_size=20)
    worker = ActivityWorker(
        hub, concurrency=8, idle_poll_ms=5, push_wakeups=False, lock_timeout_ms=LEASE_MS
    )

    @worker.activity("Quick")
    def quick(ctx: ActivityContext, _: Any) -> int:
        return ctx.activity_id

    @worker.activity("Kept")
    def kept(ctx: ActivityContext, _: Any) -> int:
        ctx.token.wait(KEPT_S)  # renewed meanwhile; returns early only if cancelled
        return ctx.activity_id

    @worker.activity("Lost")
    def lost(ctx: ActivityContext, _: Any) -> None:
        ctx.token.wait(10.0)  # until its lease is found lost

    names = ("Quick", "Kept", "Lost", "Quick")
    reaping = threading.Event()

    def reap_lost_items() -> None:
        """Deletes each leased Lost item, as a cancellation would: its
        renewal then finds no lease, and the worker drops the item."""
        with psycopg.connect(database_url, autocommit=True) as conn:
            while not reaping.wait(0.02):
                conn.execute(
                    f'DELETE FROM "{hub_schema}".worker_queue'
                    " WHERE lock_token IS NOT NULL AND work_item LIKE '%%\"Lost\"%%'"
                )

    def enqueue(first: int) -> None:
        for n in range(first, first + ROUND_ITEMS):
            hub.enqueue_worker_work(activity_execute(f"round-{n}", 1, name=names[n % len(names)]))

    def handled() -> int:
        s = worker.stats
        return s.completed + s.failed + s.lost + s.given_back

    def reached(goal: int) -> bool:
        return handled() >= goal

    reaper = threading.Thread(target=reap_lost_items, daemon=True)
    reaper.start()
    threads_before = threading.active_count()
    samples: list[int] = []
    try:
        for round_number in range(ROUNDS):
            enqueue(round_number * ROUND_ITEMS)
            goal = handled() + ROUND_ITEMS - 20  # the rest: given back by the stop
            with worker:
                wait_until(partial(reached, goal), timeout_s=120, message="a round")
            assert threading.active_count() == threads_before  # the slots are gone
            wait_until(
                lambda: queued_unleased(sql, hub_schema) == queued(sql, hub_schema),
                timeout_s=10,
                message="the given back items to be free",
            )
            samples.append(live_objects())
        # What the stops gave back, and nothing else, is still queued: a last run ends it.
        with worker:
            wait_until(lambda: queued(sql, hub_schema) == 0, timeout_s=60, message="the rest")
    finally:
        reaping.set()
        reaper.join()
    stats = worker.stats
    print(f"rounds of {ROUND_ITEMS}: live objects {samples}; {stats}")
    assert stats.lost >= ROUNDS * ROUND_ITEMS // len(names) - 20 and stats.renewals > 0
    assert stats.given_back > 0
    assert hub_connections(sql, hub.config.application_name) <= hub.config.pool_max_size
    assert samples[-1] - samples[1] <= ROUND_GROWTH_AT_MOST, samples


def queued(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(f'SELECT count(*) FROM "{schema}".worker_queue').fetchone()
    return int(row[0]) if row else -1


def queued_unleased(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(
        f'SELECT count(*) FROM "{schema}".worker_queue WHERE lock_token IS NULL'
    ).fetchone()
    return int(row[0]) if row else -1
