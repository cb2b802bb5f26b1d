"""A plan's Read (provider/client/reads.py) is a SELECT composed with
psycopg.sql: names are identifiers, values are parameters, so what a caller
passes never becomes SQL text; its rows are those the same SELECT written
by hand returns."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.sql import SQL

from provider import TaskHub
from provider.client.hub_views import POISON
from provider.client.on_connection import OnConnection
from provider.client.reads import Column, Join, Order, Read, Where, columns_of, counted, statement
from provider.hub_rows import ChildInstance
from tests.support.busy_hub import make_busy

HOSTILE = "x'); DROP TABLE instances; --"


def text_of(read: Read, conn: psycopg.Connection[Any]) -> str:
    query, _ = statement("orders", read)
    return query.as_string(conn)


def test_a_read_names_its_relation_columns_order_and_limit(
    sql: psycopg.Connection[Any],
) -> None:
    read = Read(
        "instances",
        columns_of(ChildInstance),
        (Where("parent_instance_id", "=", "p"),),
        order=(Order("created_at"), Order("instance_id", descending=True)),
        limit=5,
    )
    assert text_of(read, sql) == (
        'SELECT "instance_id", "orchestration_name", "created_at" FROM "orders"."instances"'
        ' WHERE "parent_instance_id" = %(w0)s ORDER BY "created_at", "instance_id" DESC'
        " LIMIT %(limit)s"
    )
    assert statement("orders", read)[1] == {"w0": "p", "limit": 5}


def test_joins_groups_expressions_and_counts_compose_too(sql: psycopg.Connection[Any]) -> None:
    read = Read(
        "orchestrator_queue",
        (Column("kind", SQL("'q'")), Column("n", SQL("count(*)"))),
        alias="q",
        joins=(Join("instances", "i", (("q.instance_id", "instance_id"),), outer=True),),
        where=(
            Where("i.instance_id", "IS NULL"),
            Where("q.created_at", "<", 1000, around=SQL("to_timestamp({} / 1000.0)")),
            Where("q.instance_id", "= ANY", ["a", "b"]),
        ),
        group_by=("kind",),
    )
    assert text_of(counted(read), sql) == (
        'SELECT count(*) AS count FROM (SELECT \'q\' AS "kind", count(*) AS "n"'
        ' FROM "orders"."orchestrator_queue" AS "q"'
        ' LEFT JOIN "orders"."instances" AS "i" ON "q"."instance_id" = "i"."instance_id"'
        ' WHERE "i"."instance_id" IS NULL AND "q"."created_at" < to_timestamp(%(w1)s / 1000.0)'
        ' AND "q"."instance_id" = ANY (%(w2)s) GROUP BY \'q\') AS counted'
    )


def test_a_value_is_never_sql_text(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    make_busy(hub, hub_schema, sql)
    read = Read("instances", (Column("instance_id"),), (Where("instance_id", "=", HOSTILE),))
    query, params = statement(hub_schema, read)
    assert HOSTILE not in query.as_string(sql) and params == {"w0": HOSTILE}
    held = OnConnection(sql, hub_schema)
    assert held.run(held.plans._read(read)) == []
    assert held.run(held.plans.instance_exists(HOSTILE)) is False
    assert held.run(held.plans.instance_exists("quiet")) is True


def test_an_operator_outside_the_few_is_refused() -> None:
    read = Read("instances", (Column("instance_id"),), (Where("instance_id", "; --", "x"),))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no operator"):
        statement("orders", read)


def test_the_rows_are_those_of_the_same_select_by_hand(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    make_busy(hub, hub_schema, sql)
    held = OnConnection(sql, hub_schema)
    by_plan = held.run(held.plans.view_rows(POISON))
    by_hand = sql.execute(
        "SELECT queue, id, instance_id, attempt_count"
        f' FROM "{hub_schema}".taskhub_poison_candidates ORDER BY attempt_count DESC'
    ).fetchall()
    assert [(r.queue, r.id, r.instance_id, r.attempt_count) for r in by_plan] == by_hand
    assert held.run(held.plans.count_prune_candidates(4_102_444_800_000, 1)) == 0
