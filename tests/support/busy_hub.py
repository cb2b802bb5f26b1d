"""A hub with something to look at: a leased turn and activity, a session, a
dead letter, a stuck instance and a poison candidate (the runbook's tests,
the command line's and the metrics')."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import (
    activity_execute,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import TaskHub
from tests.support.runtime_traffic import run_traffic


def set_cap(sql: psycopg.Connection[Any], schema: str, cap: int) -> None:
    sql.execute(
        f'UPDATE "{schema}".taskhub_settings SET value = %s'
        " WHERE name = 'dead_letter_after_attempts'",
        [str(cap)],
    )


@pytest.fixture
def busy_hub(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    """A hub with a leased turn and activity, a session, a dead letter, a
    stuck instance and a poison candidate."""
    return make_busy(hub, hub_schema, sql)


@pytest.fixture
def live_hub(database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    """The busy hub after real traffic: the duroxide runtime's orchestrations
    first (tests/support/runtime_traffic.py), then the leases and letters."""
    run_traffic(database_url, hub_schema)
    return make_busy(hub, hub_schema, sql)


def make_busy(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    hub.enqueue_orchestrator_work("leased-instance", start_orchestration("leased-instance"))
    assert hub.fetch_orchestration_item(60_000) is not None
    hub.enqueue_worker_work(activity_execute("leased-instance", 1, session_id="sess-1"))
    assert hub.fetch_work_item(60_000, owner_id="worker-a") is not None

    hub.enqueue_orchestrator_work("quiet", start_orchestration("quiet"))
    item = hub.fetch_orchestration_item(60_000)
    assert item is not None and item.instance_id == "quiet"
    hub.ack_orchestration_item(
        item.lock_token, 1, history_delta=[orchestration_started("quiet")], metadata=metadata()
    )

    set_cap(sql, hub_schema, 2)  # the lowest threshold a hub accepts
    hub.enqueue_orchestrator_work("stuck-instance", start_orchestration("stuck-instance"))
    for _ in range(2):
        item = hub.fetch_orchestration_item(60_000)
        assert item is not None and item.instance_id == "stuck-instance"
        hub.abandon_orchestration_item(item.lock_token)
    assert hub.fetch_orchestration_item(60_000) is None  # moved to dead_letters
    set_cap(sql, hub_schema, 50)

    hub.enqueue_orchestrator_work("hot", start_orchestration("hot"))
    sql.execute(
        f'UPDATE "{hub_schema}".orchestrator_queue SET attempt_count = 42'
        " WHERE instance_id = 'hot'"
    )
    return hub_schema
