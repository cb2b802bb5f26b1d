"""What a light turn writes besides its work (revision 0018): the fetch's
lease tag on a message is a HOT update (no index holds lock_token, so no
index entry is written), and an ack that changes nothing of its execution
leaves that row as it was (no row lock, no WAL). 0017 indexed lock_token and
locked the execution row on every turn (ON CONFLICT DO UPDATE ... WHERE
false locks the row it does not update); duroxide 0.2.2 indexes lock_token."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from devkit.workloads.work_items import (
    external_raised,
    history_row,
    orchestration_started,
    start_orchestration,
)

NOW = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
# Messages are enqueued visible a second ago: the fetch reads the clock in
# whole milliseconds, so a message made visible "now" can stay hidden for
# up to a millisecond from a fetch right after it.


def fetch(conn: psycopg.Connection[Any], q: str) -> tuple[str, int]:
    row: Any = conn.execute(
        f"SELECT out_lock_token, out_execution_id FROM {q}.fetch_orchestration_item({NOW}, 30000)"
    ).fetchone()
    assert row is not None
    return row[0], row[1]


def first_turn(conn: psycopg.Connection[Any], q: str, instance: str) -> None:
    """The instance started and its first turn acked: its execution row exists."""
    conn.execute(
        f"SELECT {q}.enqueue_orchestrator_work(%s, %s, clock_timestamp() - interval '1 s')",
        [instance, json.dumps(start_orchestration(instance))],
    )
    token, execution = fetch(conn, q)
    conn.execute(
        f"SELECT {q}.ack_orchestration_item(%s, {NOW}, %s, %s, '[]', '[]', %s)",
        [
            token,
            execution,
            json.dumps([history_row(orchestration_started(instance))]),
            json.dumps({"orchestration_name": "TestOrch", "orchestration_version": "1.0.0"}),
        ],
    )


@pytest.mark.pins_defect(
    "the lease tag rewrote an index entry of every message it tagged",
    fails_on=("taskhub-0017", "duroxide-0.2.2"),
)
def test_the_fetch_tags_its_messages_with_hot_updates(
    flavour: Flavour, flavour_schema: str, database_url: str
) -> None:
    q = f'"{flavour_schema}"'
    with psycopg.connect(database_url) as conn:
        conn.execute(
            f"SELECT {q}.enqueue_orchestrator_work('hot', %s, clock_timestamp() - interval '1 s')",
            [json.dumps(start_orchestration("hot"))],
        )
        conn.commit()
        fetch(conn, q)  # same transaction: pg_stat_xact_* counts it at once
        counts = conn.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables"
            " WHERE relid = %s::regclass",
            [f"{q}.orchestrator_queue"],
        ).fetchone()
        assert counts == (1, 1)


@pytest.mark.pins_defect(
    "every turn locked its execution row, changed or not",
    fails_on=("taskhub-0017",),
)
def test_a_turn_that_changes_nothing_of_its_execution_leaves_the_row_alone(
    flavour: Flavour, flavour_schema: str, database_url: str
) -> None:
    q = f'"{flavour_schema}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        first_turn(conn, q, "calm")
        conn.execute(
            f"SELECT {q}.enqueue_orchestrator_work('calm', %s, clock_timestamp() - interval '1 s')",
            [json.dumps(external_raised("calm"))],
        )
        token, execution = fetch(conn, q)
        event = {"event_id": 2, "type": "ExternalEvent", "name": "Ping", "data": "{}"}
        conn.execute(
            f"SELECT {q}.ack_orchestration_item(%s, {NOW}, %s, %s, '[]', '[]', '{{}}')",
            [token, execution, json.dumps([{**history_row(event), "event_id": 2}])],
        )
        # A row lock writes the locker's transaction id into xmax.
        xmax = conn.execute(
            f"SELECT xmax::text FROM {q}.executions WHERE instance_id = 'calm'"
        ).fetchone()
        assert xmax == ("0",)
