"""bench/archive/sql_turn.py assembles its twins from bench/archive/sql_turn_twins/: the ack's
SQL body is split into its statements, and PL/pgSQL runs each as written but
for a SELECT whose rows go nowhere (a PERFORM there); no database."""

from __future__ import annotations

from bench.archive import sql_turn


def test_the_ack_splits_into_its_statements_in_order() -> None:
    statements = sql_turn.statements_of((sql_turn.TWINS / "ack_statements.sql").read_text())
    firsts = [s.split(None, 2)[:2] for s in statements]
    assert firsts == [
        ["SELECT", "__SCHEMA__.twin_lease_lost(p_lock_token)"],
        ["UPDATE", "__SCHEMA__.instances"],
        ["INSERT", "INTO"],
        ["INSERT", "INTO"],
        ["INSERT", "INTO"],
        ["DELETE", "FROM"],
        ["DELETE", "FROM"],
    ]
    assert not any(s.endswith(";") for s in statements)


def test_only_a_leading_select_becomes_a_perform() -> None:
    assert sql_turn.as_plpgsql("SELECT f(x)\n  FROM t") == "PERFORM f(x)\n  FROM t"
    insert = "INSERT INTO t (a)\nSELECT a FROM u"
    assert sql_turn.as_plpgsql(insert) == insert
    assert sql_turn.as_plpgsql("SELECTED") == "SELECTED"


def test_every_twin_names_its_schema_by_the_placeholder() -> None:
    for name in ("fetch_steps.sql", "fetch_statement.sql", "ack_steps.sql", "ack_statements.sql"):
        text = (sql_turn.TWINS / name).read_text()
        assert "__SCHEMA__." in text and "bench_" not in text, name
