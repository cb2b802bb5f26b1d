"""A start is safe to repeat with the same instance id.

A caller that did not hear how a start ended (a RetryableError during a
failover: the commit may or may not have happened) repeats it. The repeat
is defined: it starts the orchestration when the first did not commit, and
says "already exists" (False), writing nothing, when it did, whether the
start is still queued, being run, or the instance exists.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until
from devkit.workloads.work_items import metadata, orchestration_started
from provider import AsyncTaskHub, TaskHub
from provider.deploy import migrate
from provider.errors import RetryableError
from tests.support.db import new_schema_name


def queued_starts(sql: psycopg.Connection[Any], schema: str, instance: str) -> int:
    row = sql.execute(
        f'SELECT count(*) FROM "{schema}".orchestrator_queue'
        " WHERE instance_id = %s AND work_item LIKE '{\"StartOrchestration\"%%'",
        [instance],
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_second_start_of_one_id_says_it_exists_and_writes_nothing(
    hub_schema: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    assert hub.start_orchestration("order-1", "Order", {"id": 1}) is True
    assert hub.start_orchestration("order-1", "Order", {"id": 1}) is False
    assert hub.start_orchestration("order-1", "Other", None, "2.0.0") is False
    assert queued_starts(sql, hub_schema, "order-1") == 1
    # Leased but not acked: the start is still there.
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "order-1"
    assert hub.start_orchestration("order-1", "Order", {"id": 1}) is False
    # Acked: the instance exists, the start message is gone.
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[orchestration_started("order-1", "Order")],
        metadata=metadata("Order"),
    )
    assert queued_starts(sql, hub_schema, "order-1") == 0
    assert hub.start_orchestration("order-1", "Order", {"id": 1}) is False
    assert hub.fetch_orchestration_item(30_000) is None


def test_a_start_that_rolled_back_starts_when_repeated(
    hub_schema: str, database_url: str, make_hub: Callable[..., TaskHub]
) -> None:
    hub = make_hub(hub_schema)
    with psycopg.connect(database_url) as conn:
        assert hub.start_orchestration("order-2", "Order", None, conn=conn) is True
        conn.rollback()
    assert hub.start_orchestration("order-2", "Order", None) is True


def test_a_start_lost_with_its_connection_is_defined_when_repeated(
    hub_schema: str,
    database_url: str,
    make_hub: Callable[..., TaskHub],
    sql: psycopg.Connection[Any],
) -> None:
    """The connection dies under the caller (as in a failover): before the
    commit, the repeat starts it; after the commit, the repeat says it exists."""
    hub = make_hub(hub_schema)
    for instance, committed in (("lost-before-commit", False), ("lost-after-commit", True)):
        with psycopg.connect(database_url) as conn:
            hub.start_orchestration(instance, "Order", None, conn=conn)
            if committed:
                conn.commit()
            sql.execute("SELECT pg_terminate_backend(%s)", [conn.info.backend_pid])
            with pytest.raises(psycopg.OperationalError):
                conn.execute("SELECT 1")
        assert hub.start_orchestration(instance, "Order", None) is (not committed)
        assert queued_starts(sql, hub_schema, instance) == 1


def test_a_start_on_a_terminated_pooled_connection_is_retryable_and_repeats_safely(
    hub_schema: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    name = f"start-once-{secrets.token_hex(4)}"  # its connections alone are ended
    hub = make_hub(hub_schema, pool_min_size=1, pool_max_size=1, application_name=name)
    assert hub.start_orchestration("warm", "Order", None) is True
    sql.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
        [name],
    )
    outcomes: list[bool | str] = []
    for _ in range(3):
        try:
            outcomes.append(hub.start_orchestration("after-failover", "Order", None))
        except RetryableError:
            outcomes.append("retry")
    assert [o for o in outcomes if o != "retry"][:2] == [True, False], outcomes
    assert queued_starts(sql, hub_schema, "after-failover") == 1


def test_concurrent_starts_of_one_id_start_it_once(
    hub_schema: str,
    database_url: str,
    make_hub: Callable[..., TaskHub],
    sql: psycopg.Connection[Any],
) -> None:
    """Two callers in their own open transactions: the second waits for the
    first's commit and then sees its start."""
    hub = make_hub(hub_schema)
    results: list[bool] = []
    with psycopg.connect(database_url) as first:
        results.append(hub.start_orchestration("race", "Order", None, conn=first))

        def second() -> None:
            with psycopg.connect(database_url) as conn:
                results.append(hub.start_orchestration("race", "Order", None, conn=conn))
                conn.commit()

        waiter = threading.Thread(target=second)
        waiter.start()
        wait_until(
            lambda: waiting_on_a_lock(sql, first.info.backend_pid), message="the second start waits"
        )
        first.commit()
        waiter.join(timeout=30)
    assert results == [True, False]
    assert queued_starts(sql, hub_schema, "race") == 1


def waiting_on_a_lock(sql: psycopg.Connection[Any], holder: int) -> bool:
    row = sql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY (pg_blocking_pids(pid))", [holder]
    ).fetchone()
    return row is not None and row[0] == 1


def test_the_async_face_says_the_same(
    hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    async def start_twice() -> list[bool]:
        async with AsyncTaskHub.connect(database_url, hub_schema) as hub:
            return [await hub.start_orchestration("async-1", "Order", None) for _ in range(2)]

    assert asyncio.run(start_twice()) == [True, False]
    assert queued_starts(sql, hub_schema, "async-1") == 1


def test_a_hub_opened_before_revision_0025_starts_as_the_duroxide_client_does(
    database_url: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    """During a deploy from an older revision, the application's starts keep
    working: without taskhub_start_orchestration, each is queued (True)."""
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0024")
    hub = make_hub(schema)
    assert hub.start_once is False
    assert [hub.start_orchestration("old-1", "Order", None) for _ in range(2)] == [True, True]
    assert queued_starts(sql, schema, "old-1") == 2
