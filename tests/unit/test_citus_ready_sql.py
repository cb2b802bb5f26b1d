"""The SQL of sql/head/ stays ready for Citus (devkit/schema/sql_rules.py): no DML
inside a CTE, no table-reading helper inside a statement on a table, and
every UPDATE, DELETE and row lock on an instance-keyed table names the
instance (or says why the contract cannot). Text only: milliseconds."""

from __future__ import annotations

import pytest

from devkit.schema.sql_rules import check, head_sql
from provider.deploy.resources import sql_dir


def body(statements: str) -> dict[str, str]:
    """One file: a table, a helper that reads it, and a function with `statements`."""
    return {
        "t.sql": "CREATE TABLE __SCHEMA__.orchestrator_queue (id bigint, instance_id text);\n"
        "CREATE TABLE __SCHEMA__.taskhub_settings (name text, value text);\n",
        "f.sql": "CREATE FUNCTION __SCHEMA__.cap() RETURNS integer LANGUAGE sql AS $$\n"
        "    SELECT value::integer FROM __SCHEMA__.taskhub_settings\n$$;\n"
        "CREATE FUNCTION __SCHEMA__.f(p text) RETURNS void LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{statements}\nEND;\n$$;\n",
    }


def rules(statements: str) -> list[str]:
    return [violation.rule for violation in check(body(statements))]


def test_the_head_sql_follows_every_rule() -> None:
    assert [str(v) for v in check(head_sql())] == []


BROKEN = {
    "an INSERT inside a CTE": (
        "WITH moved AS (INSERT INTO __SCHEMA__.orchestrator_queue VALUES (1, p) RETURNING id)"
        " SELECT count(*) FROM moved;",
        "no DML in a CTE",
    ),
    "a DELETE inside a CTE": (
        "WITH gone AS (DELETE FROM __SCHEMA__.orchestrator_queue WHERE instance_id = p)"
        " DELETE FROM __SCHEMA__.taskhub_settings WHERE name = p;",
        "no DML in a CTE",
    ),
    "a table-reading helper in a statement": (
        "PERFORM 1 FROM __SCHEMA__.orchestrator_queue AS q"
        " WHERE q.instance_id = p AND q.id < __SCHEMA__.cap();",
        "table-reading helper in a statement",
    ),
    "an update not by instance": (
        "UPDATE __SCHEMA__.orchestrator_queue SET id = 2 WHERE id = 1;",
        "not by instance",
    ),
    "a subquery in an INSERT's RETURNING": (
        "INSERT INTO __SCHEMA__.orchestrator_queue VALUES (1, p)"
        " RETURNING EXISTS (SELECT 1 FROM __SCHEMA__.taskhub_settings) INTO v;",
        "subquery in an INSERT",
    ),
    "a row lock not by instance": (
        "PERFORM 1 FROM __SCHEMA__.orchestrator_queue AS q WHERE q.id = 1 FOR UPDATE SKIP LOCKED;",
        "not by instance",
    ),
}


@pytest.mark.parametrize(("statements", "rule"), BROKEN.values(), ids=BROKEN.keys())
def test_each_rule_catches_what_it_is_about(statements: str, rule: str) -> None:
    assert rules(statements) == [rule]


ALLOWED = {
    "the helper read into a variable first": (
        "DECLARE v integer := __SCHEMA__.cap(); BEGIN"
        " PERFORM 1 FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = p AND q.id < v;"
    ),
    "an update by instance": (
        "UPDATE __SCHEMA__.orchestrator_queue AS q SET id = 2 WHERE q.instance_id = p AND id = 1;"
    ),
    "a lease named by its token, said so": (
        "-- not by instance: the contract names the lease by its token alone.\n"
        "UPDATE __SCHEMA__.orchestrator_queue SET id = 2 WHERE id = 1;"
    ),
    "CASE THEN and ELSE stay inside their statement": (
        "UPDATE __SCHEMA__.orchestrator_queue AS q"
        " SET id = CASE WHEN q.id > 1 THEN 2 ELSE 3 END WHERE q.instance_id = p;"
    ),
    "words inside a string are not SQL": "RAISE NOTICE 'UPDATE __SCHEMA__.orchestrator_queue';",
}


@pytest.mark.parametrize("statements", ALLOWED.values(), ids=ALLOWED.keys())
def test_what_the_rules_allow(statements: str) -> None:
    assert rules(statements) == []


def test_the_rules_catch_what_revision_0012_shipped() -> None:
    """The ack of revision 0012 ended its turn with a DELETE inside a CTE."""
    released = sql_dir() / "0011_wake_check_in_the_statement/ack_orchestration_item.sql"
    files = {**head_sql(), "orchestration_queue/ack_orchestration_item.sql": released.read_text()}
    found = [(v.function, v.rule) for v in check(files)]
    assert ("ack_orchestration_item", "no DML in a CTE") in found
