"""Server time per call from pg_stat_user_functions: a schema's function
totals, read before a measurement and again once the session's own calls
have all reached the statistics."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import psycopg

FunctionTotals = dict[str, tuple[int, float]]  # name: (calls, total ms)
FLUSH_TIMEOUT_S = 10.0
POLL_S = 0.05


def function_totals(conn: psycopg.Connection[Any], schema: str) -> FunctionTotals:
    rows = conn.execute(
        "SELECT funcname, calls, total_time FROM pg_stat_user_functions WHERE schemaname = %s",
        [schema],
    ).fetchall()
    return {name: (int(calls), float(total)) for name, calls, total in rows}


def calls_between(before: FunctionTotals, after: FunctionTotals, name: str) -> int:
    return after.get(name, (0, 0.0))[0] - before.get(name, (0, 0.0))[0]


def ms_per_call(before: FunctionTotals, after: FunctionTotals, name: str) -> float:
    calls = calls_between(before, after, name)
    total_ms = after.get(name, (0, 0.0))[1] - before.get(name, (0, 0.0))[1]
    return total_ms / calls if calls else 0.0


def flushed_totals(
    url: str,
    conn: psycopg.Connection[Any],
    schema: str,
    before: FunctionTotals,
    expected: Mapping[str, int],
) -> FunctionTotals:
    """The totals once every call `expected` counts (name: calls made on
    `conn` since `before`) shows in them, read on a connection of its own.

    A backend keeps its statistics to itself until it flushes them: on 15
    and later as it goes idle after pg_stat_force_next_flush(); on 14 at the
    end of a statement at most every 500 ms, through the statistics
    collector, which a reader sees up to 500 ms late. So: nudge, read, and
    read again until the counts are there."""
    nudge = (
        "SELECT pg_stat_force_next_flush()" if conn.info.server_version >= 150000 else "SELECT 1"
    )
    deadline = time.monotonic() + FLUSH_TIMEOUT_S
    with psycopg.connect(url, autocommit=True) as reader:
        while True:
            conn.execute(nudge)
            # Each statement of an autocommit reader is its own transaction:
            # no statistics snapshot outlives it.
            after = function_totals(reader, schema)
            missing = {n: c for n, c in expected.items() if calls_between(before, after, n) < c}
            if not missing:
                return after
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"pg_stat_user_functions of {schema} still lacks calls after"
                    f" {FLUSH_TIMEOUT_S:.0f} s: {missing} expected, {after} seen"
                )
            time.sleep(POLL_S)  # the poll's interval: the counts are the condition
