"""The SQL of sql/head/ stays ready for Citus (devkit/schema/sql_rules.py): no DML
inside a CTE, no table-reading helper inside a statement on a table, and
every UPDATE, DELETE and row lock on an instance-keyed table names the
instance (or says why the contract cannot). Text only: milliseconds."""

from __future__ import annotations

import pytest

from devkit.schema.sql_rules import check, head_sql
from provider.deploy.sql_files import read_sql


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
    released = read_sql("functions/ack_orchestration_item/0011.sql")
    files = {**head_sql(), "orchestration_queue/ack_orchestration_item.sql": released}
    found = [(v.function, v.rule) for v in check(files)]
    assert ("ack_orchestration_item", "no DML in a CTE") in found


def hot_path(statements: str, distribute: str = "") -> dict[str, str]:
    """A hot function (force_generic_plan) with `statements`, a helper it calls
    that merges with an INSERT ... SELECT, and a distribute function."""
    return {
        "t.sql": "CREATE TABLE __SCHEMA__.orchestrator_queue (id bigint, instance_id text);\n"
        "CREATE TABLE __SCHEMA__.instance_locks (instance_id text, until bigint);\n",
        "h.sql": "CREATE FUNCTION __SCHEMA__.taskhub_merge(p text) RETURNS void LANGUAGE plpgsql"
        " AS $$\nBEGIN\n    INSERT INTO __SCHEMA__.instance_locks SELECT q.instance_id, q.id"
        " FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = p;\nEND;\n$$;\n",
        "d.sql": "CREATE FUNCTION __SCHEMA__.taskhub_distribute_on_citus() RETURNS text"
        " LANGUAGE plpgsql AS $$\nBEGIN\n    PERFORM 1 FROM pg_proc AS p"
        f" WHERE p.proname IN ({distribute or chr(39) + 'taskhub_merge' + chr(39)});\n"
        "    RETURN 'x';\nEND;\n$$;\n",
        "f.sql": "CREATE FUNCTION __SCHEMA__.hot(p text) RETURNS void LANGUAGE plpgsql\n"
        "SET plan_cache_mode = force_generic_plan\nAS $$\n"
        f"DECLARE v bigint; BEGIN\n{statements}\nEND;\n$$;\n",
    }


def hot_rules(statements: str, distribute: str = "") -> list[str]:
    return [violation.rule for violation in check(hot_path(statements, distribute))]


HOT_BROKEN = {
    "a join": (
        "SELECT q.id INTO v FROM __SCHEMA__.orchestrator_queue AS q"
        " JOIN __SCHEMA__.instance_locks AS il ON il.instance_id = q.instance_id"
        " WHERE q.instance_id = p;"
    ),
    "a subquery": (
        "SELECT q.id INTO v FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = p"
        " AND coalesce((SELECT il.until FROM __SCHEMA__.instance_locks AS il"
        " WHERE il.instance_id = q.instance_id), 0) < 1;"
    ),
    "an EXISTS in an expression": (
        "v := EXISTS (SELECT 1 FROM __SCHEMA__.instance_locks AS il WHERE il.instance_id = p);"
    ),
    "an INSERT ... SELECT": (
        "INSERT INTO __SCHEMA__.orchestrator_queue (id, instance_id)"
        " SELECT n, p FROM generate_series(1, 3) AS n;"
    ),
    "a volatile call in the statement": (
        "INSERT INTO __SCHEMA__.instance_locks (instance_id, until)"
        " VALUES (p, __SCHEMA__.taskhub_clock_ms(NULL));"
    ),
    "an id drawn in the statement": (
        "INSERT INTO __SCHEMA__.orchestrator_queue (id, instance_id) VALUES (nextval('s'), p);"
    ),
}


@pytest.mark.parametrize("statements", HOT_BROKEN.values(), ids=HOT_BROKEN.keys())
def test_the_hot_path_reads_or_writes_one_table_a_statement(statements: str) -> None:
    assert hot_rules(statements) == ["one table a statement"]


def test_the_hot_path_may_draw_the_clock_and_ids_into_variables_first() -> None:
    assert (
        hot_rules(
            "v := nextval('s');\n"
            "INSERT INTO __SCHEMA__.orchestrator_queue (id, instance_id) VALUES (v, p);\n"
            "SELECT il.until INTO v FROM __SCHEMA__.instance_locks AS il"
            " WHERE il.instance_id = p;\n"
            "PERFORM __SCHEMA__.taskhub_merge(p);"
        )
        == []
    )


def test_a_helper_of_the_hot_path_with_an_insert_select_needs_custom_plans_on_citus() -> None:
    """Citus cannot plan it as a generic plan, and the hot function's SET reaches it."""
    assert hot_rules("PERFORM __SCHEMA__.taskhub_merge(p);", distribute="'other'") == [
        "INSERT ... SELECT under a generic plan"
    ]


def test_the_rules_catch_the_hot_path_revision_0021_shipped() -> None:
    files = head_sql()
    for relative, released in (
        ("orchestration_queue/fetch_orchestration_item.sql", "0017"),
        ("orchestration_queue/ack_orchestration_item.sql", "0018"),
        ("worker_queue/fetch_work_item.sql", "0021"),
        ("worker_queue/ack_worker.sql", "0021"),
    ):
        name = relative.split("/")[1]
        old = read_sql(f"functions/{name.removesuffix('.sql')}/{released}.sql")
        found = {(v.function, v.rule) for v in check({**files, relative: old})}
        assert (name.removesuffix(".sql"), "one table a statement") in found


def test_an_insert_that_leaves_a_serial_id_to_its_default_calls_nextval() -> None:
    files = hot_path(
        "INSERT INTO __SCHEMA__.jobs (instance_id) VALUES (p);\n"
        "v := nextval('s');\nINSERT INTO __SCHEMA__.jobs AS j (id, instance_id) VALUES (v, p);"
    )
    files["j.sql"] = (
        "CREATE TABLE __SCHEMA__.jobs (\n    id bigserial PRIMARY KEY,\n    instance_id text\n);\n"
    )
    found = [(v.rule, " ".join(v.statement.split())) for v in check(files)]
    assert found == [
        ("one table a statement", "INSERT INTO __SCHEMA__.jobs (instance_id) VALUES (p)")
    ]


def test_a_statement_only_plain_postgresql_runs_says_so_and_passes() -> None:
    """The acks keep one INSERT ... SELECT an array on plain PostgreSQL, in a
    branch a server that runs Citus never takes."""
    assert (
        hot_rules(
            "IF v THEN NULL; ELSE\n"
            "    -- plain PostgreSQL only: one INSERT ... SELECT for the array.\n"
            "    INSERT INTO __SCHEMA__.orchestrator_queue (id, instance_id)"
            " SELECT n, p FROM generate_series(1, 3) AS n;\nEND IF;"
        )
        == []
    )
