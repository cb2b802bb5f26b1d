"""No row can wedge an instance, whatever the server's parser can do.

The released runtime decodes a fetch's history and messages with serde_json:
127 levels of arrays and objects, one of them the array the fetch hands over,
so a stored row may be 126 deep (taskhub_max_json_depth). Every write refuses
a deeper one with 22023 and writes nothing; a fetch hands one stored behind
the procedures' back over as a JSON string of its text, as it does a row the
server cannot parse, so that the runtime poisons that instance alone
(tests/runtime/test_deep_rows.py runs the runtime on them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.workloads.flavours import TASKHUB_TEXT_HISTORY
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    event,
    external_raised,
    start_orchestration,
)
from provider import TaskHub, now_ms
from tests.support.db import new_schema_name
from tests.support.deep_json import MAX_DEPTH, TOO_DEEP, deepened, nested
from tests.support.planted_rows import Hub, fetch_row, planted, write_behind_our_back
from tests.support.templates import SchemaTemplates

# The revision of the head this issue was filed against.
FILED_AGAINST = "0023"
# A hub at head that existed before 0029: it stores its history as text.
TEXT_HISTORY = "text-history"


def cases(defective_below: int) -> list[Any]:
    """(revision, depth) at head, and on the filed-against revision where it
    had the defect, as an expected failure."""
    return [
        pytest.param(revision, depth, id=f"{revision}-{depth}")
        for revision in ("head", TEXT_HISTORY)
        for depth in TOO_DEEP
    ] + [
        pytest.param(
            FILED_AGAINST,
            depth,
            id=f"{FILED_AGAINST}-{depth}",
            marks=pytest.mark.xfail(strict=True, reason=f"{FILED_AGAINST} has the defect"),
        )
        for depth in TOO_DEEP
        if depth < defective_below
    ]


@pytest.fixture
def schema_at(schema_templates: SchemaTemplates) -> Callable[[str], str]:
    """A fresh schema as the migrations leave it at a revision (a clone)."""

    def at(revision: str) -> str:
        if revision == TEXT_HISTORY:
            return TASKHUB_TEXT_HISTORY.create_schema(
                schema_templates.database_url, new_schema_name("dj")
            )
        return schema_templates.create(new_schema_name("dj"), revision=revision)

    return at


@pytest.fixture
def leased(
    request: pytest.FixtureRequest,
    schema_at: Callable[[str], str],
    make_hub: Callable[..., TaskHub],
    sql: psycopg.Connection[Any],
) -> Iterator[Hub]:
    yield Hub(make_hub(schema_at(request.param)), sql)


def _event(depth: int) -> str:
    return deepened(event(3, "kept", "ExternalEvent", name="e", data="1"), depth)


def _history(depth: int) -> str:
    return json.dumps([{"event_id": 3, "event_data": _event(depth)}])


def lease(sql: psycopg.Connection[Any], schema: str) -> tuple[str, str] | None:
    """A fetch's instance and lock token (its turn unread: Python's own JSON
    parser cannot read 5,000 levels)."""
    row = sql.execute(
        "SELECT out_instance_id, out_lock_token"
        f' FROM "{schema}".fetch_orchestration_item(%s, 30000)',
        [now_ms()],
    ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


# Each write the runtime, a worker or a client makes, with one row `depth`
# deep: (statement, arguments). Texts carry the row as a text; the ack's
# items are jsonb arguments, which the server parses before the call.
WRITES: dict[str, Callable[[Hub, int], tuple[str, list[Any]]]] = {
    "enqueue_orchestrator_work": lambda h, d: (
        "enqueue_orchestrator_work('kept', %s, now())",
        [deepened(external_raised("kept"), d)],
    ),
    "enqueue_worker_work": lambda h, d: (
        "enqueue_worker_work(%s, %s, 'kept', 1, 9)",
        [deepened(activity_execute("kept", 9), d), now_ms()],
    ),
    "ack_worker": lambda h, d: (
        "ack_worker(%s, 'kept', %s, %s)",
        [h.worker_token, deepened(activity_completed("kept", 7), d), now_ms()],
    ),
    "append_history": lambda h, d: ("append_history('kept', 1, %s::jsonb)", [_history(d)]),
    "ack_orchestration_item-event": lambda h, d: (
        "ack_orchestration_item(%s, %s, 1, %s::jsonb, '[]', '[]', '{}')",
        [h.orchestration_token, now_ms(), _history(d)],
    ),
    "ack_orchestration_item-activity": lambda h, d: (
        "ack_orchestration_item(%s, %s, 1, '[]', %s::jsonb, '[]', '{}')",
        [h.orchestration_token, now_ms(), f"[{deepened(activity_execute('kept', 9), d)}]"],
    ),
    "ack_orchestration_item-message": lambda h, d: (
        "ack_orchestration_item(%s, %s, 1, '[]', '[]', %s::jsonb, '{}')",
        [h.orchestration_token, now_ms(), f"[{deepened(external_raised('other'), d)}]"],
    ),
}
# jsonb arguments deeper than the server's parser can go are refused by the
# server itself before the call (54001, statement too complex).
JSONB_ARGUMENTS = ("ack_orchestration_item-activity", "ack_orchestration_item-message")


@pytest.mark.parametrize("write", WRITES)
# 0023 took rows up to 500 levels deep.
@pytest.mark.parametrize(("leased", "depth"), cases(defective_below=501), indirect=["leased"])
def test_every_write_refuses_a_row_deeper_than_the_runtime_decodes(
    leased: Hub, depth: int, write: str
) -> None:
    statement, arguments = WRITES[write](leased, depth)
    before = leased.snapshot()
    with pytest.raises(psycopg.Error) as refused:
        leased.conn.execute(f'SELECT "{leased.schema}".{statement}', arguments)
    error = refused.value
    if write in JSONB_ARGUMENTS and error.sqlstate == "54001":
        assert depth >= 5_000, str(error)  # the server's parser, not ours
    else:
        assert error.sqlstate == "22023", (error.sqlstate, str(error))
        assert f"nested deeper than {MAX_DEPTH} levels" in str(error)
    assert leased.snapshot() == before


@pytest.mark.parametrize("leased", ["head"], indirect=True)
@pytest.mark.parametrize("write", WRITES)
def test_a_row_as_deep_as_the_runtime_decodes_is_written(leased: Hub, write: str) -> None:
    statement, arguments = WRITES[write](leased, MAX_DEPTH)
    leased.conn.execute(f'SELECT "{leased.schema}".{statement}', arguments)


@pytest.mark.parametrize("where", ["history", "message"])
# 0023 handed over, as they were, the rows its parser could read.
@pytest.mark.parametrize(("revision", "depth"), cases(defective_below=20_000))
def test_a_fetch_hands_a_row_deeper_than_the_runtime_decodes_over_as_a_string(
    schema_at: Callable[[str], str],
    sql: psycopg.Connection[Any],
    revision: str,
    depth: int,
    where: str,
) -> None:
    schema = schema_at(revision)
    payload = nested(depth)
    if not planted(sql, schema, where, payload):
        # A history stored as json refuses a row nested deeper than the
        # server's stack takes: the bad state cannot exist.
        assert depth > 500
        return
    sql.execute(
        f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())',
        ["good", json.dumps(start_orchestration("good"))],
    )

    # The first delivery goes as stored (a look at every row would cost every
    # fetch); the runtime cannot decode it, and the lease ends unacked.
    first = lease(sql, schema)
    assert first is not None and first[0] == "bad"
    good = fetch_row(sql, schema)
    assert good is not None and good[0] == "good"
    sql.execute(f'SELECT "{schema}".abandon_orchestration_item(%s, %s)', [first[1], now_ms()])

    again = fetch_row(sql, schema)
    assert again is not None and again[0] == "bad" and again[2] == 2
    handed_over = again[3] if where == "history" else again[4]
    assert payload in handed_over  # the text, as a JSON string


@pytest.mark.parametrize("where", ["history", "message"])
def test_a_fetch_hands_a_row_as_deep_as_the_runtime_decodes_over_as_json(
    schema_at: Callable[[str], str], sql: psycopg.Connection[Any], where: str
) -> None:
    schema = schema_at("head")
    write_behind_our_back(sql, schema, where, nested(MAX_DEPTH))
    first = lease(sql, schema)
    assert first is not None
    sql.execute(f'SELECT "{schema}".abandon_orchestration_item(%s, %s)', [first[1], now_ms()])
    again = fetch_row(sql, schema)
    assert again is not None and again[0] == "bad" and again[2] == 2
    handed_over = again[3] if where == "history" else again[4]
    assert json.loads(nested(MAX_DEPTH)) in handed_over


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500])
def test_brackets_inside_strings_are_no_nesting(
    schema_at: Callable[[str], str], sql: psycopg.Connection[Any], depth: int
) -> None:
    """A value that holds JSON as a string (every input and result the
    runtime writes) may hold any number of brackets: written, and handed
    over as JSON."""
    schema = schema_at("head")
    item = external_raised("kept", data=nested(depth))
    sql.execute(
        f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())', ["kept", json.dumps(item)]
    )
    row = fetch_row(sql, schema)
    assert row is not None and row[4] == [item]
