"""What a chaos report says about a side that did not finish: the runtime's
warnings by kind, and who waits on whom at the end. A failure on a machine
whose logs are gone (CI) must be explainable from the report alone."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import psycopg

from drills.harness import ANSI

TOP_WARNINGS = 6
_TIMESTAMP = re.compile(r"^\S*\d{4}-\d\d-\d\dT\S+\s*")
_NUMBERS = re.compile(r"\d+")
_WARNING_CHARS = 200
# Words every runtime warning repeats, dropped so that the cause fits the line.
_BOILERPLATE = re.compile(
    r"duroxide::runtime::dispatchers::|ProviderError \{ |message: |"
    r"Database error: error returned from database: "
)


def warning_kinds(log: str) -> list[tuple[str, int]]:
    """The runtime's most frequent warnings, with instance ids, tokens and
    counts folded, so that one kind of failure is one line."""
    kinds: Counter[str] = Counter()
    for raw in log.splitlines():
        line = _TIMESTAMP.sub("", ANSI.sub("", raw)).strip()
        if not line.startswith(("WARN", "ERROR")) and "connect failed" not in line:
            continue
        kinds[_NUMBERS.sub("N", _BOILERPLATE.sub("", line))[:_WARNING_CHARS]] += 1
    return kinds.most_common(TOP_WARNINGS)


def blocked_statements(conn: psycopg.Connection[Any], role: str) -> list[str]:
    """The role's statements that wait for a lock, each with what blocks it."""
    rows = conn.execute(
        """
        SELECT waiting.pid,
               waiting.wait_event,
               left(waiting.query, 60),
               blocker.pid,
               blocker.usename,
               blocker.application_name,
               blocker.state,
               round(extract(epoch FROM now() - blocker.xact_start)::numeric, 1),
               left(blocker.query, 60)
          FROM pg_stat_activity AS waiting
          JOIN LATERAL unnest(pg_blocking_pids(waiting.pid)) AS b (pid) ON true
          JOIN pg_stat_activity AS blocker ON blocker.pid = b.pid
         WHERE waiting.usename = %s
           AND waiting.wait_event_type = 'Lock'
        """,
        [role],
    ).fetchall()
    return [
        f"pid {pid} waits ({event}) in {query!r} for pid {by} ({user}, {app}, {state},"
        f" transaction open {age} s): {by_query!r}"
        for pid, event, query, by, user, app, state, age, by_query in rows
    ]
