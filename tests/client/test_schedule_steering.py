"""A schedule's ticks start with its priority and labels (issue 57, item 1):
set_schedule takes them, the hub checks them in one line before anything is
written, each tick's instance starts with them (its queued start, its
steering row), and a change without them sets none. On 0028, a schedule
had no steering: its ticks fell under no label rule."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from provider import Client, InvalidInput
from provider.cli import main

T0 = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def client(hub_schema: str, database_url: str) -> Iterator[Client]:
    with Client.connect(database_url, hub_schema, statement_timeout_ms=30_000) as made:
        yield made


def queued_start(sql: psycopg.Connection[Any], schema: str) -> tuple[Any, ...] | None:
    return sql.execute(
        f'SELECT instance_id, taskhub_priority, taskhub_labels FROM "{schema}".orchestrator_queue'
    ).fetchone()


def test_each_tick_starts_with_the_schedules_priority_and_labels(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str
) -> None:
    labels = {"tenant": "acme", "region": "eu"}
    assert client.set_schedule("nightly", "Report", every_s=60, now=T0, priority=7, labels=labels)
    [schedule] = client.list_schedules()
    assert (schedule.priority, schedule.labels) == (7, labels)

    assert client.fire_schedule("nightly", T0 + timedelta(minutes=1), True)
    instance = "schedule:nightly:2026-12-05T09:01:00Z"
    assert queued_start(sql, hub_schema) == (instance, 7, ["region=eu", "tenant=acme"])
    steering = sql.execute(
        f'SELECT priority, labels FROM "{hub_schema}".taskhub_instance_labels'
        " WHERE instance_id = %s",
        [instance],
    ).fetchone()
    assert steering == (7, ["region=eu", "tenant=acme"])


def test_a_change_without_steering_sets_none(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str
) -> None:
    client.set_schedule("nightly", "Report", every_s=60, now=T0, labels={"tenant": "acme"})
    assert not client.set_schedule("nightly", "Report", every_s=60, now=T0)
    [schedule] = client.list_schedules()
    assert (schedule.priority, schedule.labels) == (0, {})
    assert client.fire_schedule("nightly", T0 + timedelta(minutes=1), True)
    row = queued_start(sql, hub_schema)
    assert row is not None and row[1:] == (None, None)


@pytest.mark.parametrize(
    ("steering", "says"),
    [
        ({"priority": 10}, "priority must be from 0 to 9"),
        ({"labels": {"Tenant": "acme"}}, "is not key=value"),
        ({"labels": {"tenant=x": "acme"}}, "holds no '='"),
        ({"labels": {f"k{n}": "v" for n in range(9)}}, "at most 8 labels"),
    ],
)
def test_bad_steering_is_refused_in_one_line_and_nothing_is_written(
    client: Client,
    sql: psycopg.Connection[Any],
    hub_schema: str,
    steering: dict[str, Any],
    says: str,
) -> None:
    with pytest.raises(InvalidInput) as refused:
        client.set_schedule("nightly", "Report", every_s=60, now=T0, **steering)
    assert says in str(refused.value)
    assert "\n" not in str(refused.value)
    assert sql.execute(f'SELECT count(*) FROM "{hub_schema}".taskhub_schedules').fetchone() == (0,)


def test_the_command_line_keeps_the_input_beside_the_labels(
    capsys: pytest.CaptureFixture[str], database_url: str, hub_schema: str, client: Client
) -> None:
    """`schedule add --input ... --label tenant=acme` stores that input (a
    first form stored the last label's value as the input) and the labels;
    `schedule list` shows them; a label without '=' is refused (exit 2)."""

    def cli(*argv: str) -> int:
        code = main([*argv, "--url", database_url, "--schema", hub_schema])
        capsys.readouterr()
        return code

    added = cli(
        "schedule", "add", "nightly", "Report", "--every", "60", "--input", '{"report": "daily"}',
        "--priority", "3", "--label", "tenant=acme", "--label", "region=eu",
    )  # fmt: skip
    assert added == 0
    [schedule] = client.list_schedules()
    assert json.loads(schedule.input) == {"report": "daily"}
    assert (schedule.priority, schedule.labels) == (3, {"region": "eu", "tenant": "acme"})
    main(["schedule", "list", "--url", database_url, "--schema", hub_schema])
    assert "region=eu tenant=acme" in capsys.readouterr().out
    assert cli("schedule", "add", "bad", "Report", "--every", "60", "--label", "tenant") == 2
    assert [s.name for s in client.list_schedules()] == ["nightly"]
