"""Flow rules by orchestration name in fetch_orchestration_item
(docs/flow-control.md): a paused orchestration's turns are handed out never,
a limited one's at most max_running at once, and neither keeps any other
orchestration's turns waiting, however deep its backlog and whether or not
its messages were written with its name. On duroxide 0.2.2 none of this
exists (and on 0029 before these rules, the kind is refused)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    external_raised,
    metadata,
    start_orchestration,
)
from provider import Client, OrchestrationItem, StartRequest, TaskHub

HubFactory = Callable[..., TaskHub]


def drain(hub: TaskHub) -> list[OrchestrationItem]:
    turns = []
    while (turn := hub.fetch_orchestration_item(30_000)) is not None:
        turns.append(turn)
    return turns


def names(turns: list[OrchestrationItem]) -> Counter[str]:
    return Counter(turn.orchestration_name for turn in turns)


def test_a_paused_orchestration_keeps_no_other_waiting_and_all_of_it_runs_after_resume(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """1,000 starts of a paused orchestration ahead of one of another: more
    than a fetch tries as candidates (8) or reads in a pass, so only a scan
    that leaves them out reaches the other."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many([StartRequest(f"bf-{n}", "Backfill") for n in range(1000)])
        client.start("order-1", "Order")
        client.pause_orchestration("Backfill", reason="vendor down")
        turns = drain(hub)
        assert [turn.instance_id for turn in turns] == ["order-1"]
        [rule] = client.flow_rules()
        assert (rule.kind, rule.name, rule.paused) == ("orchestration", "Backfill", True)
        client.resume_orchestration("Backfill")
    assert names(drain(hub)) == {"Backfill": 1000}


def test_messages_written_without_the_name_are_read_for_it_then_left_out(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """Messages queued by hand (no name column) for 100 instances of a paused
    orchestration, ahead of another's: the fetch reads each instance's name,
    skips it and writes the name on its messages, so the next fetches leave
    them out of the scan without reading them again."""
    hub = make_hub(hub_schema)
    q = f'"{hub_schema}"'
    for n in range(100):
        hub.enqueue_orchestrator_work(f"bf-{n}", start_orchestration(f"bf-{n}", "Backfill"))
    # Their first turns, so that each instance has a row naming it.
    for turn in drain(hub):
        hub.ack_orchestration_item(turn.lock_token, 1, metadata=metadata("Backfill"))
    for n in range(100):
        sql.execute(
            f"INSERT INTO {q}.orchestrator_queue (instance_id, work_item, visible_at, created_at)"
            " VALUES (%s, %s, now(), now())",
            [f"bf-{n}", json.dumps(external_raised(f"bf-{n}"))],
        )
    hub.enqueue_orchestrator_work("order-1", start_orchestration("order-1", "Order"))
    with Client.connect(database_url, hub_schema) as client:
        client.pause_orchestration("Backfill")
        assert [turn.instance_id for turn in drain(hub)] == ["order-1"]
        # A fetch names those it tried (it passes over some of each page it
        # reads, which the next fetches try): a few more and none is left
        # to read, and none was handed out.
        unnamed = []
        for _ in range(10):
            assert hub.fetch_orchestration_item(30_000) is None
            [(count,)] = sql.execute(
                f"SELECT count(*) FROM {q}.orchestrator_queue WHERE taskhub_orchestration IS NULL"
            ).fetchall()
            unnamed.append(count)
        assert unnamed[-1] == 0 and unnamed == sorted(unnamed, reverse=True)
        client.resume_orchestration("Backfill")
    assert names(drain(hub)) == {"Backfill": 100}


def test_an_orchestrations_limit_holds_its_turns_and_no_other(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many([StartRequest(f"bf-{n}", "Backfill") for n in range(40)])
        client.start_many([StartRequest(f"order-{n}", "Order") for n in range(3)])
        client.set_orchestration_limit("Backfill", 2, reason="shared database")
        turns = drain(hub)
        assert names(turns) == {"Backfill": 2, "Order": 3}
        [rule] = client.flow_rules()
        assert (rule.kind, rule.max_running, rule.running, rule.turns) == (
            "orchestration",
            2,
            0,
            2,
        )
        # An ack frees the slot for the next of its turns; no third at once.
        first = next(turn for turn in turns if turn.orchestration_name == "Backfill")
        hub.ack_orchestration_item(first.lock_token, 1, metadata=metadata("Backfill"))
        assert names(drain(hub)) == {"Backfill": 1}
        client.remove_orchestration_limit("Backfill")
        assert names(drain(hub)) == {"Backfill": 37}


def test_an_instances_own_work_carries_its_orchestrations_name(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    """The name flows as labels do: the start names it, the turn's lease
    holds it, the activities the turn queues carry it, and so do their
    completions and the turn's own timers, which the scan can then leave
    out of a fetch without reading the instance."""
    hub = make_hub(hub_schema)
    q = f'"{hub_schema}"'
    hub.enqueue_orchestrator_work("o-1", start_orchestration("o-1", "Order"))
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    hub.ack_orchestration_item(
        turn.lock_token,
        1,
        worker_items=[activity_execute("o-1", 1, name="Charge")],
        metadata=metadata("Order"),
    )
    assert sql.execute(f"SELECT taskhub_orchestration FROM {q}.worker_queue").fetchall() == [
        ("Order",)
    ]
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    hub.ack_work_item(lease.lock_token, activity_completed("o-1", 1))
    assert sql.execute(f"SELECT taskhub_orchestration FROM {q}.orchestrator_queue").fetchall() == [
        ("Order",)
    ]


def test_orchestration_rules_are_refused_in_one_line_when_they_cannot_be(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    q = f'"{hub_schema}"'
    for call, message in (
        (f"{q}.taskhub_set_flow_rate('orchestration', 'Order', 5)", "not rated"),
        (f"{q}.taskhub_set_flow_limit('orchestration', 'Order', 0)", "from 1 to 10000"),
        (f"{q}.taskhub_pause_flow('orchestration', '', NULL)", "non-empty"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message) as refused:
            sql.execute(f"SELECT {call}")
        assert "\n" not in (refused.value.diag.message_primary or "\n")
    assert sql.execute(f"SELECT count(*) FROM {q}.taskhub_flow_rules").fetchone() == (0,)
