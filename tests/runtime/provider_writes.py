"""Our provider's half of the outbox groups (scenarios.py): starts and an
event written with the caller's own rows, in its transaction, that the
runtime (of whichever release) then runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import psycopg
from psycopg import sql

from devkit.waiting import wait_until
from provider import AsyncTaskHub, TaskHub

LISTENING_S = 30.0


def start_in_callers_transaction(url: str, schema: str) -> None:
    with TaskHub.connect(url, schema) as hub, psycopg.connect(url) as conn:
        conn.execute("CREATE TEMP TABLE orders (id text)")
        conn.execute("INSERT INTO orders VALUES ('order-7')")
        hub.start_orchestration("outbox-1", "Greeter", "order-7", conn=conn)
        hub.start_orchestration("outbox-approve", "AwaitApproval", None, conn=conn)
        conn.commit()


def approve_once_listening(url: str, schema: str, gone: Callable[[], bool] | None = None) -> None:
    """Raise Approve to outbox-approve in the caller's transaction once the
    orchestration says (its custom status) that it listens: an event that
    comes before the subscription is dropped. `gone()` true: the runtime's
    process has ended, and nothing will listen."""
    query = sql.SQL(
        "SELECT custom_status = 'waiting for approval' FROM {}.instances"
        " WHERE instance_id = 'outbox-approve'"
    ).format(sql.Identifier(schema))
    with psycopg.connect(url, autocommit=True) as reader:

        def listening() -> bool:
            row = reader.execute(query).fetchone()
            return bool(row and row[0])

        wait_until(
            lambda: listening() or (gone is not None and gone()),
            LISTENING_S,
            message="outbox-approve to listen",
        )
        if not listening():
            return
    with TaskHub.connect(url, schema) as hub, psycopg.connect(url) as conn:
        conn.execute("CREATE TEMP TABLE orders (id text)")
        conn.execute("INSERT INTO orders VALUES ('order-7')")
        hub.raise_event("outbox-approve", "Approve", {"order": "order-7"}, conn=conn)
        conn.commit()


def start_rolled_back_then_committed(url: str, schema: str) -> None:
    """outbox-2 in a transaction rolled back, then outbox-3 on the pool."""

    async def write() -> None:
        async with (
            AsyncTaskHub.connect(url, schema) as hub,
            await psycopg.AsyncConnection.connect(url) as conn,
        ):
            await hub.start_orchestration("outbox-2", "Greeter", "nobody", conn=conn)
            await conn.rollback()
        async with AsyncTaskHub.connect(url, schema) as hub:
            await hub.start_orchestration("outbox-3", "Greeter", "somebody")

    asyncio.run(write())
