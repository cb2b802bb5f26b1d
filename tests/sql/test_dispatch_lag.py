"""taskhub_dispatch_lag_ms (TaskHub.dispatch_lag_ms), what retention asks before
each batch: how long the oldest orchestration message a dispatcher could take
right now has waited. Messages not yet visible, leased by a fetch, or waiting
behind a turn that holds their instance are not lag."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from devkit.workloads.work_items import start_orchestration
from provider import TaskHub, now_ms


def ago(seconds: float) -> datetime:
    return datetime.now(UTC) - timedelta(seconds=seconds)


def test_an_idle_hub_has_no_lag(hub: TaskHub) -> None:
    assert hub.dispatch_lag_ms() == 0
    hub.enqueue_orchestrator_work("later", start_orchestration("later"), delay_ms=60_000)
    assert hub.dispatch_lag_ms() == 0  # not visible yet: nobody is behind


def test_the_lag_is_the_wait_of_the_oldest_message_a_dispatcher_could_take(
    hub: TaskHub,
) -> None:
    hub.enqueue_orchestrator_work("new", start_orchestration("new"))
    hub.enqueue_orchestrator_work("old", start_orchestration("old"), visible_at=ago(5))
    lag = hub.dispatch_lag_ms()
    assert 5_000 <= lag < 60_000


def test_messages_leased_or_behind_a_held_turn_are_not_lag(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    hub.enqueue_orchestrator_work("held", start_orchestration("held"), visible_at=ago(30))
    item = hub.fetch_orchestration_item(lock_timeout_ms=60_000)
    assert item is not None and item.instance_id == "held"
    assert hub.dispatch_lag_ms() == 0  # leased by the turn
    # A message that arrives for the held instance waits for the turn to end.
    hub.enqueue_orchestrator_work("held", start_orchestration("held"), visible_at=ago(20))
    assert hub.dispatch_lag_ms() == 0
    # Its lease expired: a dispatcher could take it, and it has waited 20 s.
    sql.execute(
        f'UPDATE "{hub_schema}".instance_locks SET locked_until = %s WHERE instance_id = %s',
        [now_ms() - 1, "held"],
    )
    assert hub.dispatch_lag_ms() >= 20_000
