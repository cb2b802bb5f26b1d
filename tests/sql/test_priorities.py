"""Priorities and labels at start (docs/flow-control.md): a start names a
priority (0-9) and labels; both fetches take higher priority first among due
work, then the oldest; work that waited longer than priority_aging_ms is not
overtaken by work that came after it; and everything the instance causes
(its turns, activities, timers, sub-orchestrations, completions) carries
the instance's steering. Without any, nothing changes. On duroxide 0.2.2 and
on 0028 there is no priority: the fetches go by age alone."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import (
    activity_execute,
    metadata,
    start_orchestration,
    timer_fired,
)
from provider import Client, StartRequest, TaskHub, now_ms
from provider.errors import PermanentError, StartConflict

HubFactory = Callable[..., TaskHub]


@pytest.fixture
def client(hub_schema: str, database_url: str) -> Iterator[Client]:
    with Client.connect(database_url, hub_schema, statement_timeout_ms=5_000) as client:
        yield client


def steered_rows(sql: psycopg.Connection[Any], schema: str, queue: str) -> list[tuple[Any, ...]]:
    return sql.execute(
        f"SELECT instance_id, taskhub_priority, taskhub_labels, taskhub_rank IS NOT NULL"
        f' FROM "{schema}".{queue} ORDER BY id'
    ).fetchall()


def test_the_highest_priority_is_fetched_first_then_the_oldest(
    hub_schema: str, make_hub: HubFactory, client: Client
) -> None:
    hub = make_hub(hub_schema)
    client.start_many([StartRequest(f"low-{n}", "Order") for n in range(20)])
    client.start("urgent-5", "Order", priority=5)
    client.start("urgent-9", "Order", priority=9)
    client.start("urgent-5b", "Order", priority=5)

    order = []
    for _ in range(6):
        turn = hub.fetch_orchestration_item(30_000)
        assert turn is not None
        order.append(turn.instance_id)
    assert order == ["urgent-9", "urgent-5", "urgent-5b", "low-0", "low-1", "low-2"]


def test_the_defect_without_priorities_an_urgent_start_waits_behind_the_backlog(
    hub_schema: str, make_hub: HubFactory, client: Client, sql: psycopg.Connection[Any]
) -> None:
    """The same starts with the steering taken off the rows (as 0028 has
    none): the urgent one comes 21st."""
    hub = make_hub(hub_schema)
    client.start_many([StartRequest(f"low-{n}", "Order") for n in range(20)])
    client.start("urgent", "Order", priority=9)
    sql.execute(f'UPDATE "{hub_schema}".orchestrator_queue SET taskhub_rank = NULL')
    order = []
    while (turn := hub.fetch_orchestration_item(30_000)) is not None:
        order.append(turn.instance_id)
    assert order.index("urgent") == 20


def test_work_that_waited_past_the_aging_bound_goes_before_later_urgent_work(
    hub_schema: str, make_hub: HubFactory, client: Client, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = '1000'"
        " WHERE name = 'priority_aging_ms'"
    )
    for instance, waited_ms in (("old", 2_000), ("recent", 500)):
        sql.execute(
            f'INSERT INTO "{hub_schema}".worker_queue (work_item, visible_at, created_at)'
            " VALUES (%s, now() - %s * interval '1 millisecond', now())",
            [json.dumps(activity_execute(instance, 1, name="Low")), waited_ms],
        )
    client.start("urgent", "Order", priority=9)
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    hub.ack_orchestration_item(
        turn.lock_token,
        1,
        worker_items=[activity_execute("urgent", 1, name="High")],
        metadata=metadata("Order"),
    )
    handed = []
    while (lease := hub.fetch_work_item(30_000)) is not None:
        body = lease.work_item["ActivityExecute"]
        assert isinstance(body, dict)
        handed.append(str(body["instance"]))
    # old waited 2 s, more than the bound (1 s): ahead of urgent, queued now;
    # recent waited 0.5 s: behind it.
    assert handed == ["old", "urgent", "recent"]


def test_everything_an_instance_causes_carries_its_steering(
    hub_schema: str, make_hub: HubFactory, client: Client, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    client.start("parent", "Order", priority=7, labels={"tenant": "acme", "region": "eu"})
    labels = ["region=eu", "tenant=acme"]
    assert steered_rows(sql, hub_schema, "orchestrator_queue") == [("parent", 7, labels, True)]

    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    child_start = start_orchestration("child", "Payment")
    child_start["StartOrchestration"]["parent_instance"] = "parent"
    hub.ack_orchestration_item(
        turn.lock_token,
        1,
        worker_items=[activity_execute("parent", 1, name="Charge")],
        orchestrator_items=[timer_fired("parent", 2, now_ms() + 60_000), child_start],
        metadata=metadata("Order"),
    )
    assert steered_rows(sql, hub_schema, "worker_queue") == [("parent", 7, labels, True)]
    assert steered_rows(sql, hub_schema, "orchestrator_queue") == [
        ("parent", 7, labels, True),
        ("child", 7, labels, True),
    ]
    assert sql.execute(
        f'SELECT priority, labels FROM "{hub_schema}".taskhub_instance_labels'
        " WHERE instance_id = 'child'"
    ).fetchone() == (7, labels)

    # The activity's completion comes back with it, and so does an event
    # raised from outside.
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    hub.ack_work_item(
        lease.lock_token,
        {"ActivityCompleted": {"instance": "parent", "execution_id": 1, "id": 1, "result": '"ok"'}},
    )
    client.raise_event("parent", "Shipped", "{}")
    rows = steered_rows(sql, hub_schema, "orchestrator_queue")
    assert rows[-2:] == [("parent", 7, labels, True), ("parent", 7, labels, True)]


def test_a_start_without_steering_writes_none(
    hub_schema: str, make_hub: HubFactory, client: Client, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    client.start("plain", "Order")
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    hub.ack_orchestration_item(
        turn.lock_token,
        1,
        worker_items=[activity_execute("plain", 1, name="Charge")],
        metadata=metadata("Order"),
    )
    assert steered_rows(sql, hub_schema, "worker_queue") == [("plain", None, None, False)]
    assert sql.execute(
        f'SELECT count(*) FROM "{hub_schema}".taskhub_instance_labels'
    ).fetchone() == (0,)


@pytest.mark.parametrize(
    ("priority", "labels", "message"),
    [
        (10, None, "priority must be from 0 to 9"),
        (-1, None, "priority must be from 0 to 9"),
        (0, {"Tenant": "acme"}, "label 'Tenant=acme' is not key=value"),
        (0, {"tenant": ""}, "is not key=value"),
        (0, {"tenant": "a\x1bb"}, "is not key=value"),
        (0, {"tenant": "x" * 201}, "is not key=value"),
        (0, {f"k{n}": "v" for n in range(9)}, "at most 8 labels"),
    ],
)
def test_a_start_with_bad_steering_is_refused_in_one_line_and_writes_nothing(
    hub_schema: str,
    client: Client,
    sql: psycopg.Connection[Any],
    priority: int,
    labels: dict[str, str] | None,
    message: str,
) -> None:
    with pytest.raises(PermanentError, match=message) as refused:
        client.start_many(
            [
                StartRequest("fine", "Order"),
                StartRequest("bad", "Order", None, None, priority, labels),
            ]
        )
    assert "\n" not in str(refused.value)
    for table in ("orchestrator_queue", "taskhub_instance_labels"):
        assert sql.execute(f'SELECT count(*) FROM "{hub_schema}".{table}').fetchone() == (0,)


def test_a_repeated_start_must_ask_for_the_same_steering(hub_schema: str, client: Client) -> None:
    assert client.start("order-1", "Order", priority=3, labels={"tenant": "acme"}).started
    again = client.start("order-1", "Order", priority=3, labels={"tenant": "acme"})
    assert not again.started
    with pytest.raises(StartConflict, match="other priority or labels"):
        client.start("order-1", "Order", priority=4, labels={"tenant": "acme"})
    with pytest.raises(StartConflict, match="other priority or labels"):
        client.start("order-1", "Order")
    with pytest.raises(PermanentError, match="holds no '='"):
        client.start("order-2", "Order", labels={"tenant=acme": "x"})
