"""Autocommit connections whose statements a timeout bounds, whatever sits
between them and the server (the dashboard's pool: provider/dashboard/hub.py).

A session's `SET statement_timeout` would stay, behind a transaction pooler,
on a server connection that other clients get next, and bound none of this
client's later statements; a startup option is refused by the poolers. So
each statement run outside a transaction runs in one of its own, under
`SET LOCAL statement_timeout`: as bounded behind any pooler, and still
autocommit to its caller (a statement that fails leaves nothing open, so
trying a function an older hub may lack and then another still works). A
transaction the caller opens itself is the caller's to bound.
"""

from __future__ import annotations

import functools
from typing import Any, Self

import psycopg
from psycopg.abc import Params, Query
from psycopg.pq import TransactionStatus

from provider.client.pooling import set_timeout


def bound_statements(conn: psycopg.Connection[Any], timeout_ms: int) -> None:
    """Each statement `conn` runs outside a transaction, from now on, in a
    transaction of its own bounded by `timeout_ms` (a pool's `configure`)."""
    conn.cursor_factory = _bounded_cursor(timeout_ms)


@functools.cache
def _bounded_cursor(timeout_ms: int) -> type[psycopg.Cursor[Any]]:
    class BoundedCursor(psycopg.Cursor[Any]):
        def execute(
            self,
            query: Query,
            params: Params | None = None,
            *,
            prepare: bool | None = None,
            binary: bool | None = None,
        ) -> Self:
            run: Any = super().execute  # psycopg's overloads split what Query joins
            conn = self.connection
            if not conn.autocommit or conn.info.transaction_status != TransactionStatus.IDLE:
                run(query, params, prepare=prepare, binary=binary)
                return self
            with conn.transaction():
                run(set_timeout(timeout_ms, local=True))
                run(query, params, prepare=prepare, binary=binary)
            return self

    return BoundedCursor
