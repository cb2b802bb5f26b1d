"""Defects of the shipped duroxide-pg procedures (reference spec §2.12, §2.17)
that taskhub-pg fixes; each test runs on a duroxide 0.2.2 schema too and
must fail there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import history_row, orchestration_started, queue_message
from provider import TaskHub, now_ms


@pytest.mark.pins_defect(
    "append_history omits the NOT NULL created_at, so every call fails",
    fails_on=("duroxide-0.2.2",),
)
def test_append_history_stores_events(flavour_schema: str, sql: psycopg.Connection[Any]) -> None:
    event = orchestration_started("appended")
    sql.execute(
        f'SELECT "{flavour_schema}".append_history(%s, 1, %s)',
        ["appended", psycopg.types.json.Jsonb([history_row(event)])],
    )
    rows = sql.execute(
        f'SELECT out_event_data FROM "{flavour_schema}".fetch_history_with_execution(%s, 1)',
        ["appended"],
    ).fetchall()
    assert len(rows) == 1


@pytest.mark.pins_defect(
    "dropping orphan mailbox messages leaves an execution row with no instance",
    fails_on=("duroxide-0.2.2",),
)
def test_dropping_orphan_messages_leaves_no_dangling_execution(
    flavour_schema: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(flavour_schema)
    hub.enqueue_orchestrator_work("never-started", queue_message("never-started", "Config", "v1"))
    # What the runtime does with a mailbox-only batch of an unknown instance:
    # an ack with nothing in it, which consumes the messages.
    row = sql.execute(
        f'SELECT out_lock_token FROM "{flavour_schema}".fetch_orchestration_item(%s, 30000)',
        [now_ms()],
    ).fetchone()
    assert row is not None
    sql.execute(
        f"SELECT \"{flavour_schema}\".ack_orchestration_item(%s, %s, 1, '[]', '[]', '[]', '{{}}')",
        [row[0], now_ms()],
    )
    executions = sql.execute(
        f"SELECT count(*) FROM \"{flavour_schema}\".executions WHERE instance_id = 'never-started'"
    ).fetchone()
    assert executions == (0,)


@pytest.mark.pins_defect(
    "latest_execution_id returns NULL for an unknown instance (the runtime cannot decode it)",
    fails_on=("duroxide-0.2.2",),
)
def test_latest_execution_id_of_an_unknown_instance_is_a_clear_error(
    flavour_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with pytest.raises(psycopg.Error, match="Instance not found: nobody"):
        sql.execute(f'SELECT "{flavour_schema}".latest_execution_id(%s)', ["nobody"])
