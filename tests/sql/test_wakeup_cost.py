"""What push wakeups cost a hub where no worker waits (a busy hub): the
procedures that make work visible ask whether a listener waits inside the
statement that writes the work, and run nothing more when none does.
Revision 0010 called taskhub_wake (two statements of its own) on every
enqueue and completion; 0011 calls it only when a listener waits."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    start_orchestration,
    timer_fired,
)

NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


def wake_calls_of_a_busy_hub(conn: psycopg.Connection[Any], schema: str) -> int:
    """Calls of taskhub_wake made by an enqueue on each queue, an ack of an
    orchestration turn that schedules an activity and a due timer, and the
    activity's ack with a completion; all in one transaction, counted by
    PostgreSQL's function statistics."""
    q = f'"{schema}"'
    conn.execute("SET LOCAL track_functions = 'pl'")
    conn.execute(
        f"SELECT {q}.enqueue_orchestrator_work('w', %s, clock_timestamp())",
        [json.dumps(start_orchestration("w"))],
    )
    row: Any = conn.execute(
        f"SELECT out_lock_token, out_execution_id FROM {q}.fetch_orchestration_item({NOW}, 30000)"
    ).fetchone()
    conn.execute(
        f"SELECT {q}.ack_orchestration_item(%s, {NOW}, %s, '[]', %s, %s, '{{}}')",
        [
            row[0],
            row[1],
            json.dumps([activity_execute("w", 1)]),
            json.dumps([timer_fired("w", 2, fire_at_ms=0)]),
        ],
    )
    conn.execute(f"SELECT {q}.enqueue_worker_work(%s, 0)", [json.dumps(activity_execute("x", 1))])
    token: Any = conn.execute(
        f"SELECT out_lock_token FROM {q}.fetch_work_item({NOW}, 30000)"
    ).fetchone()
    conn.execute(
        f"SELECT {q}.ack_worker(%s, 'w', %s)", [token[0], json.dumps(activity_completed("w", 1))]
    )
    calls = conn.execute(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
        " WHERE schemaname = %s AND funcname = 'taskhub_wake'",
        [schema],
    ).fetchone()
    assert calls is not None
    return int(calls[0])


@pytest.mark.pins_defect(
    "every enqueue and completion ran taskhub_wake's own check",
    fails_on=("taskhub-0010",),
)
def test_a_hub_where_nobody_waits_runs_no_wakeup_statement(
    flavour: Flavour, flavour_schema: str, database_url: str
) -> None:
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2 has no push wakeups")
    with psycopg.connect(database_url) as conn:
        # A worker that listens, busy: registered, not waiting.
        conn.execute(f'SELECT "{flavour_schema}".taskhub_listen(%s)', ["worker"])
        conn.commit()
        assert wake_calls_of_a_busy_hub(conn, flavour_schema) == 0


@pytest.mark.parametrize("queue", ["worker", "orchestrator"])
def test_a_waiting_listener_is_still_woken(hub_schema: str, database_url: str, queue: str) -> None:
    with (
        psycopg.connect(database_url, autocommit=True) as listener,
        psycopg.connect(database_url) as conn,
    ):
        listener.execute(f'SELECT "{hub_schema}".taskhub_listen(%s)', [queue])
        listener.execute(f'SELECT "{hub_schema}".taskhub_set_waiting(pg_backend_pid(), true)')
        # Woken by the first work that became visible on its queue, once: the
        # wake clears the flag, and the listener sets it again when it waits.
        assert wake_calls_of_a_busy_hub(conn, hub_schema) == 1
