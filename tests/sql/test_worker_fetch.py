"""fetch_work_item: valid leases, tag and session routing, and no waiting."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import activity_execute
from provider import TagFilter, TaskHub, now_ms
from tests.support.db import open_transaction, worker_lease_remaining_ms

HubFactory = Callable[..., TaskHub]


def enqueue_with_clock(
    conn: psycopg.Connection[Any], schema: str, item: dict[str, object], caller_now_ms: int
) -> None:
    body = item["ActivityExecute"]
    assert isinstance(body, dict)
    conn.execute(
        f'SELECT "{schema}".enqueue_worker_work(%s, %s, %s, %s, %s, %s, %s)',
        [
            json.dumps(item),
            caller_now_ms,
            body["instance"],
            body["execution_id"],
            body["id"],
            body.get("session_id"),
            body.get("tag"),
        ],
    )


@pytest.mark.pins_defect(
    "worker lease computed from the caller's clock", fails_on=("duroxide-0.2.2",)
)
def test_stale_caller_clock_still_gets_a_full_worker_lease(
    flavour_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(flavour_schema)
    enqueue_with_clock(sql, flavour_schema, activity_execute("w-inst", 1), now_ms() - 60_000)

    lease = hub.fetch_work_item(5_000, caller_now_ms=now_ms() - 10_000)

    assert lease is not None
    remaining = worker_lease_remaining_ms(sql, flavour_schema, lease.lock_token)
    assert remaining is not None and 4_000 < remaining <= 5_000
    hub.ack_work_item(lease.lock_token, None)


@pytest.mark.pins_defect(
    "a session claim waits behind another worker's claim, then returns nothing",
    fails_on=("duroxide-0.2.2",),
)
def test_session_being_claimed_elsewhere_is_skipped_without_waiting(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema, statement_timeout_ms=2_000)
    hub.enqueue_worker_work(activity_execute("s-inst", 1, session_id="S"))
    hub.enqueue_worker_work(activity_execute("s-inst", 2, session_id="S"))
    hub.enqueue_worker_work(activity_execute("plain-inst", 3))

    with open_transaction(database_url) as other_worker:
        row = other_worker.execute(
            f'SELECT out_work_item FROM "{flavour_schema}".fetch_work_item'
            "(%s, 30000, 'w1', 30000, '{}', 'any')",
            [now_ms()],
        ).fetchone()
        assert row is not None and '"id":1' in str(row[0]).replace(" ", "")
        started = time.monotonic()
        lease = hub.fetch_work_item(30_000, owner_id="w2", tags=TagFilter.any())
        waited = time.monotonic() - started

    assert lease is not None and lease.work_item["ActivityExecute"]["id"] == 3
    assert waited < 0.5


def test_concurrent_uncommitted_worker_fetchers_get_distinct_items(
    flavour_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(flavour_schema)
    for n in range(10):
        hub.enqueue_worker_work(activity_execute("many", n + 1))

    ids: list[int] = []
    done = threading.Barrier(7)

    def worker() -> None:
        with open_transaction(database_url) as conn:
            row = conn.execute(
                f'SELECT out_work_item FROM "{flavour_schema}".fetch_work_item(%s, 30000)',
                [now_ms()],
            ).fetchone()
            assert row is not None

            ids.append(json.loads(row[0])["ActivityExecute"]["id"])
            done.wait(timeout=10)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    done.wait(timeout=10)
    for thread in threads:
        thread.join()
    assert sorted(ids) == [1, 2, 3, 4, 5, 6]


def test_worker_items_are_served_in_order(flavour_schema: str, make_hub: HubFactory) -> None:
    hub = make_hub(flavour_schema)
    for n in range(5):
        hub.enqueue_worker_work(activity_execute("fifo", n + 1))
    served = []
    while (lease := hub.fetch_work_item(30_000)) is not None:
        served.append(lease.work_item["ActivityExecute"]["id"])
    assert served == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (TagFilter.default_only(), {1}),
        (TagFilter.only("gpu"), {2}),
        (TagFilter.default_and("gpu"), {1, 2}),
        (TagFilter.any(), {1, 2, 3}),
        (TagFilter.none(), set()),
    ],
    ids=["default_only", "tags", "default_and", "any", "none"],
)
def test_tag_filters_select_exactly_their_items(
    flavour_schema: str, make_hub: HubFactory, tags: TagFilter, expected: set[int]
) -> None:
    hub = make_hub(flavour_schema)
    hub.enqueue_worker_work(activity_execute("tags", 1))
    hub.enqueue_worker_work(activity_execute("tags", 2, tag="gpu"))
    hub.enqueue_worker_work(activity_execute("tags", 3, tag="python"))
    served = set()
    while (lease := hub.fetch_work_item(30_000, tags=tags)) is not None:
        served.add(lease.work_item["ActivityExecute"]["id"])
    assert served == expected


def test_session_items_go_to_their_owner_only(flavour_schema: str, make_hub: HubFactory) -> None:
    hub = make_hub(flavour_schema)
    hub.enqueue_worker_work(activity_execute("sess", 1, session_id="S"))
    hub.enqueue_worker_work(activity_execute("sess", 2, session_id="S"))

    first = hub.fetch_work_item(30_000, owner_id="owner-a")
    assert first is not None
    assert hub.fetch_work_item(30_000) is None  # no owner: session items are not eligible
    assert hub.fetch_work_item(30_000, owner_id="owner-b") is None
    second = hub.fetch_work_item(30_000, owner_id="owner-a")
    assert second is not None and second.work_item["ActivityExecute"]["id"] == 2


DELAYED_BACKLOG = 2_000


def index_entries_read(conn: psycopg.Connection[Any], schema: str, table: str) -> int:
    """Rows and index entries of `table` this transaction's scans have read so far."""
    row = conn.execute(
        "SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(r.oid)), 0)"
        "  FROM pg_class AS r"
        " WHERE r.oid = %(t)s::regclass"
        "    OR r.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = %(t)s::regclass)",
        {"t": f'"{schema}".{table}'},
    ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.pins_defect(
    "every worker fetch reads past the work due later that was queued before",
    fails_on=("taskhub-0020",),
)
def test_work_due_later_costs_a_worker_fetch_nothing(
    flavour_schema: str, database_url: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    """Items given back with a delay (a retry's backoff) or scheduled ahead
    stay queued, ahead of newer work by id: a fetch must not read them."""
    sql.execute(
        f'INSERT INTO "{flavour_schema}".worker_queue'
        " (work_item, visible_at, created_at, instance_id, execution_id, activity_id)"
        " SELECT %s, now() + interval '1 day', now(), 'later-' || n, 1, 1"
        "   FROM generate_series(1, %s) AS n",
        [json.dumps(activity_execute("later", 1)), DELAYED_BACKLOG],
    )
    sql.execute(f'ANALYZE "{flavour_schema}".worker_queue')
    make_hub(flavour_schema).enqueue_worker_work(activity_execute("now", 1))

    with psycopg.connect(database_url) as conn:
        before = index_entries_read(conn, flavour_schema, "worker_queue")
        lease = conn.execute(
            f'SELECT out_work_item FROM "{flavour_schema}".fetch_work_item(%s, %s)',
            [now_ms(), 30_000],
        ).fetchone()
        read = index_entries_read(conn, flavour_schema, "worker_queue") - before
        conn.rollback()

    assert lease is not None and json.loads(lease[0])["ActivityExecute"]["instance"] == "now"
    assert read < 50, f"the fetch read {read} rows and index entries for one item"


def hot_updates(conn: psycopg.Connection[Any], schema: str, table: str) -> tuple[int, int]:
    """Updates and HOT updates of `table` in this transaction so far."""
    row = conn.execute(
        "SELECT pg_stat_get_xact_tuples_updated(%(t)s::regclass),"
        "       pg_stat_get_xact_tuples_hot_updated(%(t)s::regclass)",
        {"t": f'"{schema}".{table}'},
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@pytest.mark.pins_defect(
    "the worker fetch's lease tag writes an entry in every index of the queue",
    fails_on=("taskhub-0020", "duroxide-0.2.2"),
)
def test_the_worker_lease_tag_is_a_hot_update(
    flavour_schema: str, database_url: str, make_hub: HubFactory
) -> None:
    """No index holds lock_token or locked_until (ack, renew and abandon find
    the item by the id its token names), so tagging an item with its lease
    writes no index entry: the queue's indexes do not churn per activity."""
    hub = make_hub(flavour_schema)
    hub.enqueue_worker_work(activity_execute("hot", 1, tag="gpu"))
    with psycopg.connect(database_url) as conn:
        token = conn.execute(
            f'SELECT out_lock_token FROM "{flavour_schema}".fetch_work_item(%s, %s,'
            " p_tag_filter => ARRAY['gpu'], p_tag_mode => 'tags')",
            [now_ms(), 30_000],
        ).fetchone()
        updates, hot = hot_updates(conn, flavour_schema, "worker_queue")
        conn.commit()
    assert token is not None
    assert (updates, hot) == (1, 1)
    hub.renew_work_item_lock(token[0], 30_000)
    hub.ack_work_item(token[0], None)
