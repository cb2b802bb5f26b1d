"""A test clock for a hub's leases, so that a test moves time on instead of
sleeping until a lease, a delay or a session lock has run out.

Every lease decision of a hub reads one clock, taskhub_clock_ms
(sql/head/helpers/taskhub_clock_ms.sql). `advance_clock` replaces it, in the
test's own schema, by the same function whose server time is shifted by an
offset kept in a table, and adds to that offset. Visibility, expiry and
session timeouts then move with it; what the server stamps with its own time
(visible_at at enqueue, the history's timestamps) does not, as it would not
after a real wait either."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from provider import TaskHub
from provider.deploy.sql_files import render_sql
from provider.schema_name import quote_schema

CLOCK_FUNCTION = "head/helpers/taskhub_clock_ms.sql"
CLOCK_TABLE = "taskhub_test_clock"
# Moves a hub's clock on by so many ms (the `move_clock` fixture).
MoveClock = Callable[[TaskHub, int], None]
SERVER_NOW = "(extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint"


def shifted_clock_function(schema: str) -> str:
    """The head's clock function, reading the offset (it must still read the
    server's time as this expects: the assertion says so when it changes)."""
    head = render_sql(CLOCK_FUNCTION, schema)
    assert head.count(SERVER_NOW) == 1 and head.count("CREATE FUNCTION") == 1, CLOCK_FUNCTION
    offset = f"(SELECT offset_ms FROM {quote_schema(schema)}.{CLOCK_TABLE})"
    return head.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").replace(
        SERVER_NOW, f"{SERVER_NOW} + {offset}"
    )


def advance_clock(url: str, schema: str, ms: int) -> None:
    """Move the hub's clock `ms` on (installing the test clock on first use):
    every session of the hub sees it at its next clock read."""
    assert ms > 0, "a test clock only moves on"
    quoted = quote_schema(schema)
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        installed = conn.execute("SELECT to_regclass(%s)", [f"{quoted}.{CLOCK_TABLE}"]).fetchone()
        if installed is None or installed[0] is None:
            conn.execute(f"CREATE TABLE {quoted}.{CLOCK_TABLE} (offset_ms bigint NOT NULL)")
            conn.execute(f"INSERT INTO {quoted}.{CLOCK_TABLE} VALUES (0)")
            conn.execute(f"GRANT SELECT ON {quoted}.{CLOCK_TABLE} TO PUBLIC")
            conn.execute(shifted_clock_function(schema))
        conn.execute(f"UPDATE {quoted}.{CLOCK_TABLE} SET offset_ms = offset_ms + %s", [ms])
