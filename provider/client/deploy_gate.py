"""The deploy gate's SQL: what taskhub_check_drift() names, and the pieces
of a repair (provider/deploy/gate.py composes them with the revisions and
the released SQL files).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from provider.client.hub_status import VERSION_TABLE
from provider.schema_name import quote_schema


@dataclass(frozen=True)
class Problem:
    kind: str  # pending, not_migrated, missing, changed, security_definer, settings,
    #            grant, duroxide_ledger, setting, unrecorded
    object: str
    detail: str


@dataclass(frozen=True)
class Recorded:
    """A function or view as the last migration run recorded it."""

    kind: str
    name: str
    security_definer: bool | None
    settings: list[str]


def installed_revision(conn: psycopg.Connection[Any], schema: str) -> str | None:
    found = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".{VERSION_TABLE}']).fetchone()
    if not found or found[0] is None:
        return None
    row = conn.execute(
        sql.SQL("SELECT version_num FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(VERSION_TABLE)
        )
    ).fetchone()
    return str(row[0]) if row else None


def has_drift_check(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute(
        "SELECT to_regproc(%s) IS NOT NULL", [f'"{schema}".taskhub_check_drift']
    ).fetchone()
    return bool(row and row[0])


def read_drift(conn: psycopg.Connection[Any], schema: str) -> list[Problem]:
    query = sql.SQL("SELECT problem, object, detail FROM {}.taskhub_check_drift() ORDER BY 1, 2")
    rows = conn.execute(query.format(sql.Identifier(schema))).fetchall()
    return [Problem(str(kind), str(name), str(detail)) for kind, name, detail in rows]


def recorded(conn: psycopg.Connection[Any], schema: str, obj: str) -> Recorded | None:
    row = conn.execute(
        sql.SQL(
            "SELECT kind, name, security_definer, settings FROM {}.taskhub_definitions"
            " WHERE object = %s"
        ).format(sql.Identifier(schema)),
        [obj],
    ).fetchone()
    if row is None:
        return None
    return Recorded(str(row[0]), str(row[1]), row[2], list(row[3] or []))


def apply_definition(
    conn: psycopg.Connection[Any], schema: str, definition: Recorded, statement: str
) -> None:
    """Run one rendered CREATE OR REPLACE of a released file."""
    try:
        with conn.transaction():
            conn.execute(sql.SQL(statement))
    except psycopg.errors.InvalidTableDefinition:
        # A view whose columns a hand edit changed: OR REPLACE cannot, drop it.
        conn.execute(
            sql.SQL("DROP VIEW {}.{}").format(
                sql.Identifier(schema), sql.Identifier(definition.name)
            )
        )
        conn.execute(sql.SQL(statement))


def restore_attributes(
    conn: psycopg.Connection[Any], schema: str, obj: str, definition: Recorded
) -> None:
    """SECURITY DEFINER and the SET clauses as recorded (revisions after a
    function's file may have changed them with ALTER FUNCTION)."""
    signature = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " WHERE p.pronamespace = %s::regnamespace"
        "   AND format('function %%s(%%s)', p.proname,"
        "              pg_get_function_identity_arguments(p.oid)) = %s",
        [quote_schema(schema), obj],
    ).fetchone()
    if signature is None:
        return
    function = sql.SQL(signature[0])
    security = "SECURITY DEFINER" if definition.security_definer else "SECURITY INVOKER"
    conn.execute(sql.SQL("ALTER FUNCTION {} {}").format(function, sql.SQL(security)))
    conn.execute(sql.SQL("ALTER FUNCTION {} RESET ALL").format(function))
    for setting in definition.settings:
        name, _, value = setting.partition("=")
        # The value as the catalogue lists it: a list such as search_path must
        # not be quoted as one string.
        conn.execute(
            sql.SQL("ALTER FUNCTION {} SET {} = {}").format(
                function,
                sql.Identifier(name),
                sql.SQL(value),
            )
        )


def restore_grants_and_ledger(conn: psycopg.Connection[Any], schema: str) -> None:
    """Re-grant every runtime role, take EXECUTE back from PUBLIC, and write
    the versions _duroxide_migrations lacks."""
    q = sql.Identifier(schema)
    conn.execute(sql.SQL("SELECT {}.taskhub_refresh_runtime_roles()").format(q))
    conn.execute(sql.SQL("SELECT {}.taskhub_revoke_public_execute()").format(q))
    conn.execute(
        sql.SQL(
            "INSERT INTO {0}._duroxide_migrations (version, name)"
            " SELECT v, format('%s_provided_by_taskhub_pg', lpad(v::text, 4, '0'))"
            "   FROM unnest({0}.taskhub_duroxide_versions()) AS v"
            " ON CONFLICT (version) DO NOTHING"
        ).format(q)
    )
