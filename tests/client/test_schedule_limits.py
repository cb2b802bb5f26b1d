"""A schedule is held to the start's own limits when it is set (issue 54):
what set_schedule stores can be started at every tick. On 3c77916 a 20 MB
input was stored, and every fire of it failed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from provider import Client, InvalidInput
from provider.client.arguments import MAX_ID_BYTES, MAX_PAYLOAD_BYTES

T0 = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)
MB = 1024 * 1024


@pytest.fixture
def client(hub_schema: str, database_url: str) -> Iterator[Client]:
    with Client.connect(database_url, hub_schema, statement_timeout_ms=30_000) as made:
        yield made


def stored(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(f'SELECT count(*) FROM "{schema}".taskhub_schedules').fetchone()
    assert row is not None
    return int(row[0])


def set_by_sql(sql: psycopg.Connection[Any], schema: str, **arguments: Any) -> psycopg.errors.Error:
    """taskhub_set_schedule called as any SQL caller would: its refusal."""
    values = {
        "p_name": "big",
        "p_orchestration": "Report",
        "p_input": "null",
        "p_version": None,
        "p_cron": None,
        "p_every_ms": 60_000,
        "p_time_zone": "UTC",
        "p_missed": "skip",
        "p_now": T0,
        **arguments,
    }
    named = ", ".join(f"{name} => %({name})s" for name in values)
    with pytest.raises(psycopg.errors.Error) as refused:
        sql.execute(f'SELECT "{schema}".taskhub_set_schedule({named})', values)
    return refused.value


def test_a_20_mb_input_is_refused_at_set_schedule_and_nothing_is_written(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        client.set_schedule("big", "Report", "x" * (20 * MB), every_s=60, now=T0)
    assert refused.value.sqlstate == "22023"
    assert "\n" not in str(refused.value)
    assert f"larger than {MAX_PAYLOAD_BYTES} bytes" in str(refused.value)
    assert stored(sql, hub_schema) == 0
    # The hub refuses it too, whoever calls it (54000, as the enqueue does).
    error = set_by_sql(sql, hub_schema, p_input=json.dumps("x" * (20 * MB)))
    assert error.sqlstate == "54000"
    assert error.diag.message_primary == f"p_input is larger than {MAX_PAYLOAD_BYTES} bytes"
    assert stored(sql, hub_schema) == 0


def test_an_input_under_8_mb_whose_start_is_larger_is_refused(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str
) -> None:
    """A start carries the input as a JSON string, escaped once more: 3 MB
    of quotes are a 6 MB input and a 12 MB start."""
    quotes = '"' * (3 * MB)
    with pytest.raises(InvalidInput, match="makes a work item larger than"):
        client.set_schedule("quotes", "Report", quotes, every_s=60, now=T0)
    error = set_by_sql(sql, hub_schema, p_name="quotes", p_input=json.dumps(quotes))
    assert error.sqlstate == "54000"
    assert "makes the start of each tick larger than" in str(error.diag.message_primary)
    assert stored(sql, hub_schema) == 0


LONG = "a" * (MAX_ID_BYTES + 1)


@pytest.mark.parametrize(
    ("what", "options", "by_sql"),
    [
        ("orchestration", {"orchestration": LONG, "every_s": 60}, {"p_orchestration": LONG}),
        ("version", {"version": LONG, "every_s": 60}, {"p_version": LONG}),
        ("cron", {"cron": LONG}, {"p_cron": LONG, "p_every_ms": None}),
    ],
)
def test_names_version_and_cron_longer_than_an_id_are_refused(
    client: Client,
    sql: psycopg.Connection[Any],
    hub_schema: str,
    what: str,
    options: dict[str, Any],
    by_sql: dict[str, Any],
) -> None:
    orchestration = options.pop("orchestration", "Report")
    with pytest.raises(InvalidInput, match=f"{what} is longer than {MAX_ID_BYTES} bytes"):
        client.set_schedule("long", orchestration, now=T0, **options)
    error = set_by_sql(sql, hub_schema, p_name="long", **by_sql)
    assert error.sqlstate == "54000"
    assert error.diag.message_primary == f"p_{what} is longer than {MAX_ID_BYTES} bytes"
    assert stored(sql, hub_schema) == 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"p_version": ""}, "p_version must be NULL or a non-empty text"),
        (
            {"p_input": '"\\u0000"'},
            "p_input cannot be stored: it holds the JSON escape \\u0000",
        ),
        ({"p_input": "[" * 200 + "]" * 200}, "p_input cannot be stored: it is nested deeper"),
        ({"p_input": "{not json"}, "p_input must be JSON text"),
    ],
)
def test_the_hub_says_in_one_line_why_it_refuses_an_input_or_a_version(
    sql: psycopg.Connection[Any], hub_schema: str, arguments: dict[str, Any], message: str
) -> None:
    error = set_by_sql(sql, hub_schema, **arguments)
    assert error.sqlstate == "22023"
    assert error.diag.message_primary is not None
    assert error.diag.message_primary.startswith(message)
    assert "\n" not in error.diag.message_primary
    assert stored(sql, hub_schema) == 0


def test_a_schedule_at_the_limit_is_stored_and_its_tick_starts(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str
) -> None:
    """The limit is the start's, no tighter: the largest input whose start
    fits is accepted, and its tick is started."""
    assert client.set_schedule("edge", "Report", "", every_s=60, now=T0) is True
    row = sql.execute(
        f"SELECT octet_length(out_work_item) FROM"
        f' "{hub_schema}".taskhub_schedule_start(%s, %s, NULL, %s, %s)',
        ["edge", "Report", json.dumps(""), T0],
    ).fetchone()
    assert row is not None
    room = MAX_PAYLOAD_BYTES - int(row[0])
    client.set_schedule("edge", "Report", "x" * room, every_s=60, now=T0)
    outcome = client.fire_schedule_outcome("edge", datetime(2026, 12, 5, 9, 1, tzinfo=UTC), True)
    assert (outcome.taken, outcome.failure) == (True, None)
    with pytest.raises(InvalidInput):
        client.set_schedule("edge", "Report", "x" * (room + 1), every_s=60, now=T0)
