"""How a hub stores its history (revision 0029, issue 56): a hub a migration
run creates stores each event as json, validated once as it is written, so
that a fetch hands a history over without a parse; a hub that existed before
keeps text until `taskhub-pg turn-form json` stores it as json, with its
runtimes stopped; a downgrade below 0029 takes it back to text. Every
function reads and writes either form, and refuses an event that is not
JSON."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import orchestration_started, start_orchestration
from provider import TaskHub, now_ms
from provider.cli import main
from provider.deploy import migrate, turn_form
from tests.support import drift
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2, TASKHUB_TEXT_HISTORY
from tests.support.planted_rows import fetch_row

NOT_JSON = "{not json"


def stored(url: str, schema: str) -> tuple[str | None, str, str]:
    """(form, storage, compression) of history.event_data."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT attstorage, attcompression FROM pg_attribute"
            " WHERE attrelid = %s::regclass AND attname = 'event_data'",
            [f'"{schema}".history'],
        ).fetchone()
        assert row is not None
        return turn_form.history_form(conn, schema), str(row[0]), str(row[1])


def one_turn(url: str, schema: str, instance: str) -> None:
    """A started instance with two events, written by the hub's own ack."""
    hub = TaskHub.connect(url, schema)
    try:
        hub.enqueue_orchestrator_work(instance, start_orchestration(instance))
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        hub.ack_orchestration_item(
            item.lock_token,
            1,
            history_delta=[
                orchestration_started(instance),
                {"event_id": 2, "type": "KeyValueSet", "key": "k", "value": "v"},
            ],
        )
        hub.enqueue_orchestrator_work(instance, start_orchestration(instance))
    finally:
        hub.close()


def history_text(url: str, schema: str, instance: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            f'SELECT out_event_data FROM "{schema}".fetch_history(%s)', [instance]
        ).fetchall()
    return [str(text) for (text,) in rows]


def test_a_new_hub_stores_json_and_a_hub_that_existed_keeps_text(database_url: str) -> None:
    new = new_schema_name("hf")
    migrate.upgrade(database_url, new)
    assert stored(database_url, new)[:2] == ("json", "m")  # and its storage stays MAIN
    adopted = DUROXIDE_0_2_2.create_schema(database_url, new_schema_name("hf"))
    migrate.upgrade(database_url, adopted)
    older = TASKHUB_TEXT_HISTORY.create_schema(database_url, new_schema_name("hf"))
    for schema in (adopted, older):
        assert stored(database_url, schema)[0] == "text"
    for schema in (new, adopted, older):
        assert drift.check(database_url, schema).problems == []


def test_turn_form_json_stores_a_text_history_as_json(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = TASKHUB_TEXT_HISTORY.create_schema(database_url, new_schema_name("hf"))
    one_turn(database_url, schema, "kept")
    before = history_text(database_url, schema, "kept")
    q = f'"{schema}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        # A row written by hand, as a text history can hold.
        conn.execute(
            f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type,"
            " event_data, created_at) VALUES ('kept', 1, 3, 'Event', %s, now())",
            [NOT_JSON],
        )
    capsys.readouterr()
    assert main(["turn-form", "--url", database_url, "--schema", schema]) == 0
    assert "stored as text (`turn-form json` stores it as json" in capsys.readouterr().out

    assert main(["turn-form", "json", "--url", database_url, "--schema", schema]) == 0
    said = capsys.readouterr().out
    assert "the history is stored as json (was text)" in said
    assert stored(database_url, schema)[:2] == ("json", "m")
    # Every event as it was; the row that is not JSON kept as a string of its text.
    assert history_text(database_url, schema, "kept") == [*before, json.dumps(NOT_JSON)]
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = fetch_row(conn, schema)
    assert row is not None and row[0] == "kept"
    handed_over = row[3]  # json: psycopg hands it over parsed
    assert handed_over[:2] == [json.loads(event) for event in before]
    assert handed_over[2] == NOT_JSON
    assert drift.check(database_url, schema).problems == []

    # Once json, the switch has nothing left to do.
    assert main(["turn-form", "json", "--url", database_url, "--schema", schema]) == 0
    assert "the history is stored as json" in capsys.readouterr().out


def test_below_0029_turn_form_json_leaves_the_history_text(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 0017-0028 the functions write text: the switch changes the fetch
    alone, and says what to do for the history."""
    schema = new_schema_name("hf")
    migrate.upgrade(database_url, schema, "0016")
    migrate.upgrade(database_url, schema, "0028")
    capsys.readouterr()
    assert main(["turn-form", "json", "--url", database_url, "--schema", schema]) == 0
    said = capsys.readouterr().out
    assert "hands over json (was jsonb)" in said and "the history stays text" in said
    assert stored(database_url, schema)[0] == "text"


def test_a_downgrade_below_0029_takes_the_history_back_to_text(database_url: str) -> None:
    schema = new_schema_name("hf")
    migrate.upgrade(database_url, schema)
    one_turn(database_url, schema, "kept")
    before = history_text(database_url, schema, "kept")
    migrate.downgrade(database_url, schema, "0028")
    assert stored(database_url, schema)[:2] == ("text", "m")
    assert history_text(database_url, schema, "kept") == before
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = fetch_row(conn, schema)  # 0028's fetch reads it
    assert row is not None and row[0] == "kept"
    # Upgraded again, it is a hub that existed: it keeps text.
    migrate.upgrade(database_url, schema)
    assert stored(database_url, schema)[0] == "text"


@pytest.mark.parametrize("hub_made", ["new", "before 0029"])
def test_the_writes_refuse_an_event_that_is_not_json(database_url: str, hub_made: str) -> None:
    """Validated once, as it is written, whatever the storage: the call fails
    and writes nothing."""
    if hub_made == "new":
        schema = new_schema_name("hf")
        migrate.upgrade(database_url, schema)
    else:
        schema = TASKHUB_TEXT_HISTORY.create_schema(database_url, new_schema_name("hf"))
    one_turn(database_url, schema, "kept")
    before = history_text(database_url, schema, "kept")
    bad = json.dumps([{"event_id": 3, "event_type": "Event", "event_data": NOT_JSON}])
    q = f'"{schema}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        row: Any = fetch_row(conn, schema)
        assert row is not None
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute(
                f"SELECT {q}.ack_orchestration_item(%s, %s, 1, %s, '[]', '[]', '{{}}')",
                [row[1], now_ms(), bad],
            )
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute(f"SELECT {q}.append_history('kept', 1, %s)", [bad])
    assert history_text(database_url, schema, "kept") == before


def test_an_adopted_hub_gets_the_hot_fetch_from_turn_form_json(database_url: str) -> None:
    """A live duroxide 0.2.2 schema, adopted: jsonb and text until the one
    offline step, then json throughout."""
    schema = DUROXIDE_0_2_2.create_schema(database_url, new_schema_name("hf"))
    migrate.upgrade(database_url, schema)
    one_turn(database_url, schema, "kept")
    before = history_text(database_url, schema, "kept")
    done = turn_form.switch(database_url, schema, "json")
    assert (done.was, done.now, done.history_was, done.history_now) == (
        "jsonb",
        "json",
        "text",
        "json",
    )
    assert history_text(database_url, schema, "kept") == before
    assert drift.check(database_url, schema).problems == []
