"""A plan's read of a relation, the step beside the procedure `Call`
(provider/client/plans.py): which columns of which view or table, which
rows, grouped how, in what order, how many. `statement` composes it with
psycopg.sql: every name an Identifier, every value a parameter, so nothing a
caller passes ever becomes SQL text; an expression (a column's, a filter's)
is the plan's own psycopg.sql text.

    yield Read(
        "dead_letters",
        columns_of(InstanceDeadLetter),
        where=(Where("instance_id", "=", instance_id),),
        order=(Order("dead_at", descending=True),),
    )

A relation is the hub's (in its schema), or with `catalogue` PostgreSQL's
(pg_catalog). A dotted name (`i.instance_id`) is a column of an alias: a
read may join other relations on equal columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from psycopg import sql

Operator = Literal["=", "<", "<=", ">", ">=", "~", "= ANY", "IS NULL", "IS NOT NULL"]
# Only these are ever written into a statement, whatever a caller passes.
_OPERATORS = {operator: sql.SQL(operator) for operator in get_args(Operator)}
_NO_VALUE = ("IS NULL", "IS NOT NULL")


@dataclass(frozen=True)
class Column:
    """An output column named `name`: the relation's column of that name,
    or `expression` (of the relation's columns)."""

    name: str
    expression: sql.Composable | None = None


@dataclass(frozen=True)
class Where:
    """A condition every row read meets: `column operator value`, the value
    a parameter (none for IS NULL and IS NOT NULL). `column` may be an
    expression; `around` puts the parameter inside one, as in
    sql.SQL("to_timestamp({} / 1000.0)")."""

    column: str | sql.Composable
    operator: Operator
    value: Any = None
    around: sql.SQL | None = None


@dataclass(frozen=True)
class Order:
    """Rows ordered by the output column `column`."""

    column: str
    descending: bool = False


@dataclass(frozen=True)
class Join:
    """Another relation of the hub, as `alias`, joined where each pair of
    `on` is equal (a column of the rows so far, a column of this one). An
    outer join keeps the rows without a match, with NULLs for its columns."""

    relation: str
    alias: str
    on: tuple[tuple[str, str], ...]
    outer: bool = False


@dataclass(frozen=True)
class Read:
    """SELECT `columns` FROM `relation` [joins] WHERE `where` GROUP BY
    `group_by` ORDER BY `order` LIMIT `limit`. With `count_rows`, how many
    rows that would be (a column `count`). `timeout_ms` bounds this read
    alone (on a pooled connection, instead of the hub's statement timeout)."""

    relation: str
    columns: tuple[Column, ...]
    where: tuple[Where, ...] = ()
    group_by: tuple[str, ...] = ()  # output columns
    order: tuple[Order, ...] = ()
    limit: int | None = None
    alias: str | None = None
    joins: tuple[Join, ...] = ()
    catalogue: bool = False
    count_rows: bool = False
    timeout_ms: int | None = None

    @property
    def name(self) -> str:
        """The read as logs and call observers name it."""
        return f"read {self.relation}"


def columns_of(row: type[Any], **expressions: sql.Composable) -> tuple[Column, ...]:
    """The columns of a row type (a dataclass): one per field, in its order,
    each the relation's column of that name unless `expressions` gives it."""
    return tuple(
        Column(field.name, expressions.get(field.name)) for field in dataclasses.fields(row)
    )


def counted(read: Read) -> Read:
    """The same read, counting its rows."""
    return dataclasses.replace(read, count_rows=True)


def statement(schema: str, read: Read) -> tuple[sql.Composed, dict[str, Any]]:
    """The read's SELECT on the hub in `schema`, and its parameters."""
    params: dict[str, Any] = {}
    relation = sql.SQL("{}.{}").format(
        sql.Identifier("pg_catalog" if read.catalogue else schema), sql.Identifier(read.relation)
    )
    parts = [
        sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(_selected(column) for column in read.columns), relation
        )
    ]
    if read.alias is not None:
        parts.append(sql.SQL("AS {}").format(sql.Identifier(read.alias)))
    parts += [_join(schema, join) for join in read.joins]
    if read.where:
        conditions = [_condition(where, f"w{n}", params) for n, where in enumerate(read.where)]
        parts.append(sql.SQL("WHERE {}").format(sql.SQL(" AND ").join(conditions)))
    if read.group_by:
        grouped = [_value_of(_column_named(read, name)) for name in read.group_by]
        parts.append(sql.SQL("GROUP BY {}").format(sql.SQL(", ").join(grouped)))
    if read.order:
        ordered = [
            sql.SQL("{} DESC" if order.descending else "{}").format(sql.Identifier(order.column))
            for order in read.order
        ]
        parts.append(sql.SQL("ORDER BY {}").format(sql.SQL(", ").join(ordered)))
    if read.limit is not None:
        params["limit"] = read.limit
        parts.append(sql.SQL("LIMIT {}").format(sql.Placeholder("limit")))
    query = sql.SQL(" ").join(parts)
    if read.count_rows:
        query = sql.SQL("SELECT count(*) AS count FROM ({}) AS counted").format(query)
    return query, params


def _name(column: str) -> sql.Identifier:
    """A column, or `alias.column`."""
    return sql.Identifier(*column.split("."))


def _value_of(column: Column) -> sql.Composable:
    return column.expression if column.expression is not None else _name(column.name)


def _selected(column: Column) -> sql.Composable:
    if column.expression is None and "." not in column.name:
        return sql.Identifier(column.name)
    return sql.SQL("{} AS {}").format(
        _value_of(column), sql.Identifier(column.name.rsplit(".", 1)[-1])
    )


def _column_named(read: Read, name: str) -> Column:
    for column in read.columns:
        if column.name == name:
            return column
    raise ValueError(f"{read.name} groups by {name!r}, which it does not select")


def _join(schema: str, join: Join) -> sql.Composed:
    equal = [
        sql.SQL("{} = {}").format(_name(left), _name(f"{join.alias}.{right}"))
        for left, right in join.on
    ]
    return sql.SQL("{} {}.{} AS {} ON {}").format(
        sql.SQL("LEFT JOIN" if join.outer else "JOIN"),
        sql.Identifier(schema),
        sql.Identifier(join.relation),
        sql.Identifier(join.alias),
        sql.SQL(" AND ").join(equal),
    )


def _condition(where: Where, key: str, params: dict[str, Any]) -> sql.Composed:
    column = _name(where.column) if isinstance(where.column, str) else where.column
    operator = _OPERATORS.get(where.operator)
    if operator is None:
        raise ValueError(
            f"no operator {where.operator!r} in a read (one of {', '.join(_OPERATORS)})"
        )
    if where.operator in _NO_VALUE:
        return sql.SQL("{} {}").format(column, operator)
    params[key] = where.value
    value: sql.Composable = sql.Placeholder(key)
    if where.around is not None:
        value = where.around.format(value)
    if where.operator == "= ANY":
        return sql.SQL("{} = ANY ({})").format(column, value)
    return sql.SQL("{} {} {}").format(column, operator, value)
