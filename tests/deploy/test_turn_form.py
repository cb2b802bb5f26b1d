"""The turn's form (provider/deploy/turn_form.py): a hub a run creates hands
its turns over as json; a hub that served before revision 0017 keeps jsonb
(its runtimes have that result type prepared) until the gated switch, which
refuses while a runtime seems connected; a downgrade goes back to jsonb."""

from __future__ import annotations

import json
import subprocess

import psycopg
import pytest

from devkit.schema.catalogue import snapshot
from devkit.workloads.work_items import start_orchestration
from provider.cli import main
from provider.deploy import migrate, turn_form
from tests.support import drift
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2, TASKHUB_JSONB
from tests.support.paths import REPO


def form(url: str, schema: str) -> str | None:
    with psycopg.connect(url) as conn:
        return turn_form.current_form(conn, schema)


def made_before_0017(url: str) -> str:
    return TASKHUB_JSONB.create_schema(url, new_schema_name("tf"))


def test_a_new_hub_is_json_and_an_existing_one_stays_jsonb(database_url: str) -> None:
    new = new_schema_name("tf")
    migrate.upgrade(database_url, new)
    assert form(database_url, new) == "json"
    assert form(database_url, made_before_0017(database_url)) == "jsonb"
    adopted = DUROXIDE_0_2_2.create_schema(database_url, new_schema_name("tf"))
    migrate.upgrade(database_url, adopted)
    assert form(database_url, adopted) == "jsonb"
    for schema in (new, adopted):
        assert drift.check(database_url, schema).problems == []


def test_a_sql_script_decides_where_it_runs(database_url: str) -> None:
    """The same offline script makes a json hub of an empty schema."""
    schema = new_schema_name("tf")
    script = subprocess.run(
        [str(REPO / ".venv/bin/python"), "-m", "provider", "sql", "--schema", schema],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(script.encode())
    assert form(database_url, schema) == "json"


def test_the_turn_reads_the_same_in_both_forms(database_url: str) -> None:
    """The runtime's decoder reads either: the same values come out."""
    turns = []
    for schema in (new_schema_name("tf"), made_before_0017(database_url)):
        migrate.upgrade(database_url, schema)
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())',
                ["same", json.dumps(start_orchestration("same"))],
            )
            row = conn.execute(
                "SELECT out_history, out_messages, out_kv_snapshot"
                f' FROM "{schema}".fetch_orchestration_item(0, 30000)'
            ).fetchone()
        turns.append(row)
    assert turns[0] == turns[1]


def test_the_switch_refuses_while_a_runtime_seems_connected(
    capsys: pytest.CaptureFixture[str], database_url: str
) -> None:
    schema = made_before_0017(database_url)
    target = ["--url", database_url, "--schema", schema]
    with psycopg.connect(database_url, autocommit=True, application_name="a-runtime") as conn:
        conn.execute(f'SELECT * FROM "{schema}".fetch_orchestration_item(0, 30000)')
        capsys.readouterr()
        assert main(["turn-form", "json", *target]) == 1
        refusal = capsys.readouterr().err
        assert "look like runtimes" in refusal and "a-runtime" in refusal
        assert form(database_url, schema) == "jsonb"
        # The name before 0.2.0 still works (a hidden alias).
        assert main(["history-format", "json", "--force", *target]) == 0
    assert form(database_url, schema) == "json"
    assert drift.check(database_url, schema).problems == []
    assert main(["turn-form", "jsonb", *target]) == 0
    assert form(database_url, schema) == "jsonb"
    capsys.readouterr()
    assert main(["turn-form", *target, "--json"]) == 0
    # The switch to json stored the history as json too; back to jsonb keeps it.
    assert json.loads(capsys.readouterr().out) == {
        "schema": schema,
        "form": "jsonb",
        "history": "json",
    }


def test_a_downgrade_goes_back_to_jsonb_and_an_upgrade_keeps_it(database_url: str) -> None:
    schema = new_schema_name("tf")
    migrate.upgrade(database_url, schema)
    migrate.downgrade(database_url, schema, "0016")
    assert form(database_url, schema) == "jsonb"
    migrate.upgrade(database_url, schema)
    assert form(database_url, schema) == "jsonb"  # it existed: its runtimes may run
    assert drift.check(database_url, schema).problems == []


def fetch_definition(url: str, schema: str) -> tuple[str, ...]:
    """The fetch as the catalogue has it (body, SECURITY DEFINER, every SET),
    the schema's name taken out."""
    with psycopg.connect(url) as conn:
        functions = snapshot(conn, schema)["functions"]
    found = [
        row[:4] for row in functions if row[0].startswith("<schema>.fetch_orchestration_item(")
    ]
    assert len(found) == 1, found
    return found[0]


def test_the_switch_installs_heads_fetch_in_the_new_form(database_url: str) -> None:
    """A hub that served before 0017, upgraded to head and switched to json,
    runs what a hub created at head runs; and the other way round. (3c77916
    installed 0024's fetch whatever the revision: 0026's enable_bitmapscan =
    off went away, and `check` saw no drift.)"""
    jsonb_at_head = made_before_0017(database_url)
    migrate.upgrade(database_url, jsonb_at_head)
    json_at_head = new_schema_name("tf")
    migrate.upgrade(database_url, json_at_head)
    expected = {
        "json": fetch_definition(database_url, json_at_head),
        "jsonb": fetch_definition(database_url, jsonb_at_head),
    }
    assert "enable_bitmapscan=off" in expected["json"][3]

    switched_to_json = turn_form.switch(database_url, jsonb_at_head, "json", force=True)
    switched_to_jsonb = turn_form.switch(database_url, json_at_head, "jsonb", force=True)

    assert (switched_to_json.now, switched_to_jsonb.now) == ("json", "jsonb")
    assert fetch_definition(database_url, jsonb_at_head) == expected["json"]
    assert fetch_definition(database_url, json_at_head) == expected["jsonb"]
    for schema in (jsonb_at_head, json_at_head):
        assert drift.check(database_url, schema).problems == []
