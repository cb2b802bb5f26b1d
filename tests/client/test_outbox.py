"""Starting work inside the caller's transaction (the outbox):
start_orchestration and raise_event write exactly the work items the duroxide
client writes, on the caller's connection; committing makes them visible,
rolling back leaves nothing. The real runtime's side is in
tests/runtime/test_duroxide_runtime.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import duroxide
import psycopg
import pytest

from provider import AsyncTaskHub, InvalidInput, TaskHub

INPUTS: list[Any] = [None, "World", 7, {"a": "é", "list": [1, 2.5, None]}]


def stored_items(sql: psycopg.Connection[Any], schema: str, instance: str) -> list[str]:
    rows = sql.execute(
        f'SELECT work_item FROM "{schema}".orchestrator_queue WHERE instance_id = %s ORDER BY id',
        [instance],
    ).fetchall()
    return [str(row[0]) for row in rows]


@pytest.mark.parametrize("value", INPUTS, ids=["none", "text", "number", "object"])
def test_the_work_items_are_the_ones_the_duroxide_client_writes(
    value: Any,
    hub_schema: str,
    database_url: str,
    make_hub: Callable[..., TaskHub],
    sql: psycopg.Connection[Any],
) -> None:
    client = duroxide.Client(
        duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    )
    client.start_orchestration("by-duroxide", "Nämé", value)
    client.start_orchestration_versioned("by-duroxide-v", "Nämé", value, "2.1.0")
    client.raise_event("by-duroxide", "Évt", value)
    hub = make_hub(hub_schema)
    hub.start_orchestration("by-taskhub", "Nämé", value)
    hub.start_orchestration("by-taskhub-v", "Nämé", value, "2.1.0")
    hub.raise_event("by-taskhub", "Évt", value)

    for suffix in ("", "-v"):
        theirs = stored_items(sql, hub_schema, "by-duroxide" + suffix)
        ours = stored_items(sql, hub_schema, "by-taskhub" + suffix)
        assert [item.replace("by-taskhub", "by-duroxide") for item in ours] == theirs


def test_committing_makes_the_start_visible_and_rolling_back_leaves_nothing(
    hub_schema: str, database_url: str, make_hub: Callable[..., TaskHub]
) -> None:
    hub = make_hub(hub_schema)
    with psycopg.connect(database_url) as conn:
        hub.start_orchestration("rolled-back", "Order", {"id": 1}, conn=conn)
        hub.raise_event("rolled-back", "Paid", True, conn=conn)
        assert hub.get_queue_depths().orchestrator_queue == 0  # not committed yet
        conn.rollback()
        hub.start_orchestration("committed", "Order", {"id": 2}, conn=conn)
        assert hub.fetch_orchestration_item(30_000) is None
        conn.commit()
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "committed"
    assert hub.fetch_orchestration_item(30_000) is None


def test_the_async_face_writes_in_the_callers_async_transaction(
    hub_schema: str, database_url: str, make_hub: Callable[..., TaskHub]
) -> None:
    async def start() -> None:
        async with (
            AsyncTaskHub.connect(database_url, hub_schema) as hub,
            await psycopg.AsyncConnection.connect(database_url) as conn,
        ):
            async with conn.transaction():
                await hub.start_orchestration("async-committed", "Order", None, conn=conn)
            with pytest.raises(RuntimeError):
                async with conn.transaction():
                    await hub.start_orchestration("async-rolled-back", "Order", None, conn=conn)
                    raise RuntimeError("the caller's own failure")

    asyncio.run(start())
    hub = make_hub(hub_schema)
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "async-committed"
    assert hub.fetch_orchestration_item(30_000) is None


def test_a_bad_start_is_refused_and_the_callers_transaction_can_go_on(
    hub_schema: str, database_url: str, make_hub: Callable[..., TaskHub]
) -> None:
    hub = make_hub(hub_schema)
    with psycopg.connect(database_url) as conn:
        with pytest.raises(InvalidInput):
            hub.start_orchestration("no-name", "", None, conn=conn)
        # Refused in Python, before any SQL: the transaction is not aborted.
        with pytest.raises(InvalidInput, match="instance_id must be a non-empty text"):
            hub.start_orchestration("", "Order", None, conn=conn)
        hub.start_orchestration("after", "Order", None, conn=conn)
        conn.commit()
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "after"
