"""Hubs in a known state for the bad-input tests: an instance with a leased
turn and a leased activity (Hub), and rows written behind the procedures'
back, as rows written before a write refused them (or by another writer)
would be."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from devkit.workloads.work_items import (
    activity_execute,
    external_raised,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import TaskHub, now_ms
from provider.deploy import turn_form
from tests.support.contract import DATA_TABLES


class Hub:
    """A hub with an instance, a leased turn, a leased activity and a session."""

    def __init__(self, hub: TaskHub, conn: psycopg.Connection[Any]) -> None:
        self.hub, self.conn, self.schema = hub, conn, hub.config.schema
        hub.enqueue_orchestrator_work("kept", start_orchestration("kept"))
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        hub.ack_orchestration_item(
            item.lock_token,
            1,
            history_delta=[
                orchestration_started("kept"),
                {"event_id": 2, "type": "KeyValueSet", "key": "k", "value": "v"},
            ],
            metadata=metadata(),
        )
        hub.enqueue_orchestrator_work("kept", start_orchestration("kept"))
        leased = hub.fetch_orchestration_item(60_000)
        assert leased is not None
        self.orchestration_token = leased.lock_token
        hub.enqueue_worker_work(activity_execute("kept", 7, session_id="sess"))
        lease = hub.fetch_work_item(60_000, owner_id="owner")
        assert lease is not None
        self.worker_token = lease.lock_token

    def snapshot(self) -> dict[str, str]:
        return {
            table: str(
                self.conn.execute(
                    f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), ''))"
                    f' FROM "{self.schema}".{table} AS t'
                ).fetchone()
            )
            for table in DATA_TABLES
        }

    def call(self, function: str, *args: Any) -> list[tuple[Any, ...]]:
        placeholders = ", ".join(["%s"] * len(args))
        return self.conn.execute(
            f'SELECT * FROM "{self.schema}".{function}({placeholders})', list(args)
        ).fetchall()


def write_behind_our_back(
    sql: psycopg.Connection[Any],
    schema: str,
    where: str,
    payload: str,
    instance: str = "bad",
    orchestration: str = "TestOrch",
) -> None:
    """An instance of `orchestration` whose first event (where="history") or
    waiting message (where="message") holds `payload`, as rows written before
    the writes refused it (or by another writer) would."""
    q = f'"{schema}"'
    sql.execute(
        f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
        " current_execution_id, created_at, updated_at)"
        " VALUES (%s, %s, '1.0.0', 1, now(), now())",
        [instance, orchestration],
    )
    sql.execute(
        f"INSERT INTO {q}.executions (instance_id, execution_id, status, started_at)"
        " VALUES (%s, 1, 'Running', now())",
        [instance],
    )
    started = json.dumps(orchestration_started(instance, name=orchestration))
    sql.execute(
        f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
        " created_at) VALUES (%s, 1, 1, 'Event', %s, now())",
        [instance, payload if where == "history" else started],
    )
    message = payload if where == "message" else json.dumps(external_raised(instance))
    sql.execute(
        f"INSERT INTO {q}.orchestrator_queue (instance_id, work_item, visible_at, created_at)"
        " VALUES (%s, %s, now() - interval '1 minute', now())",
        [instance, message],
    )


# What a history stored as json answers a row that is not JSON, or is nested
# deeper than the server's stack takes: the row cannot be there at all.
REFUSED_BY_THE_TYPE = (psycopg.errors.InvalidTextRepresentation, psycopg.errors.StatementTooComplex)


def stores_history_as_json(sql: psycopg.Connection[Any], schema: str) -> bool:
    return turn_form.history_form(sql, schema) == "json"


def planted(
    sql: psycopg.Connection[Any], schema: str, where: str, payload: str, instance: str = "bad"
) -> bool:
    """write_behind_our_back, all or nothing: False where the hub stores its
    history as json and the type refuses the payload (the bad row cannot
    exist there, by construction)."""
    if where != "history" or not stores_history_as_json(sql, schema):
        write_behind_our_back(sql, schema, where, payload, instance)
        return True
    try:
        with sql.transaction():
            write_behind_our_back(sql, schema, where, payload, instance)
    except REFUSED_BY_THE_TYPE:
        return False
    return True


def fetch_row(sql: psycopg.Connection[Any], schema: str) -> tuple[Any, ...] | None:
    return sql.execute(
        "SELECT out_instance_id, out_lock_token, out_attempt_count, out_history, out_messages"
        f' FROM "{schema}".fetch_orchestration_item(%s, 30000)',
        [now_ms()],
    ).fetchone()
