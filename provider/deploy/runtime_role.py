"""Runtime and operator roles: the grant a migration ends with (`-x
runtime_role=R`, `--runtime-role R`), and the steps `taskhub-pg
grant-runtime-role`, `revoke-runtime-role`, `grant-operator-role` and
`revoke-operator-role` run.

The SQL side is sql/head/privileges/ (taskhub_grant_runtime_role.sql and its
siblings). A step run by a session that can do more than the hub's owner (a
superuser installing the DDL guard) runs behind the privileged fence
(provider/deploy/privileged_fence.py): only code the package ships.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy import citus
from provider.deploy.privileged_fence import fenced_transaction, pin_search_path
from provider.schema_name import quote_schema

RUNTIME_DDL_MODES = ("guarded", "none")

# Role names end up inside a SQL string literal: accept plain names only.
_ROLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,62}")


class InvalidRuntimeRole(ValueError):
    """The runtime role or runtime_ddl mode given to a migration is not acceptable."""


def validate_role_name(name: str) -> str:
    if not isinstance(name, str) or not _ROLE_NAME.fullmatch(name):
        raise InvalidRuntimeRole(
            f"invalid runtime role name {name!r}: use 1-63 characters from A-Z, a-z, 0-9, "
            "_ . and -, not starting with a digit"
        )
    return name


def validate_runtime_ddl(mode: str) -> str:
    if mode not in RUNTIME_DDL_MODES:
        raise InvalidRuntimeRole(
            f"invalid runtime_ddl {mode!r}: use one of {', '.join(RUNTIME_DDL_MODES)}"
        )
    return mode


def grant_statement(schema: str, role: str, runtime_ddl: str) -> str:
    """Make `role` a runtime role of `schema` (needs revision 0005 or later)."""
    quoted = quote_schema(schema)
    return f"""DO $grant$
BEGIN
    IF to_regprocedure('{quoted}.taskhub_grant_runtime_role(text,text)') IS NULL THEN
        RAISE EXCEPTION 'runtime_role needs taskhub-pg revision 0005 or later in schema {schema}'
              USING ERRCODE = '55000';
    END IF;
    PERFORM {quoted}.taskhub_grant_runtime_role(
        '{validate_role_name(role)}', '{validate_runtime_ddl(runtime_ddl)}');
END
$grant$"""


def precheck_statement(role: str, runtime_ddl: str) -> str:
    """The grant's two common refusals, checked before any revision runs:
    each revision commits on its own, and a run refused only at its grant
    would leave them applied. (taskhub_grant_runtime_role checks the rest.)"""
    name, mode = validate_role_name(role), validate_runtime_ddl(runtime_ddl)
    return f"""DO $precheck$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{name}') THEN
        RAISE EXCEPTION 'role "{name}" does not exist' USING ERRCODE = '42704';
    END IF;
    IF '{mode}' = 'guarded' AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r
                                      WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'runtime_ddl ''guarded'' needs an event trigger, which only a '
                        'superuser can create'
              USING ERRCODE = '42501',
                    HINT = 'Run this migration as a superuser, or pass runtime_ddl=none '
                           '(enough for the taskhub provider; the duroxide 0.2.2 runtime '
                           'then cannot connect).';
    END IF;
END
$precheck$"""


def refresh_statement(schema: str) -> str:
    """Re-grant the schema's runtime roles, so objects of newer revisions are covered."""
    quoted = quote_schema(schema)
    return f"""DO $refresh$
BEGIN
    IF to_regprocedure('{quoted}.taskhub_refresh_runtime_roles()') IS NOT NULL THEN
        PERFORM {quoted}.taskhub_refresh_runtime_roles();
    END IF;
END
$refresh$"""


def _call(conn: psycopg.Connection[Any], schema: str, function: str, *args: str) -> Any:
    """One call of the hub's role function, its arguments typed text."""
    placeholders = sql.SQL(", ").join(sql.SQL("%s::text") for _ in args)
    query = sql.SQL("SELECT {}.{}({})").format(
        sql.Identifier(schema), sql.Identifier(function), placeholders
    )
    row = conn.execute(query, list(args)).fetchone()
    return None if row is None else row[0]


def _runs_citus(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL").fetchone()
    return bool(row and row[0])


def _step(url: str, schema: str, function: str, *args: str, guard_changed: bool) -> Any:
    """One role step in a fenced transaction; on a hub distributed by Citus,
    the workers' DDL guard follows after the commit."""
    with psycopg.connect(url, autocommit=True) as conn:
        pin_search_path(conn)
        with fenced_transaction(conn, schema):
            result = _call(conn, schema, function, *args)
        if guard_changed and _runs_citus(conn):
            with fenced_transaction(conn, schema):
                conn.execute(citus.guard_the_workers(schema))
    return result


def grant(url: str, schema: str, role: str, runtime_ddl: str = "guarded") -> None:
    """Make `role` a runtime role of the hub (again: a second grant replaces the first)."""
    name, mode = validate_role_name(role), validate_runtime_ddl(runtime_ddl)
    _step(url, schema, "taskhub_grant_runtime_role", name, mode, guard_changed=True)


def revoke(url: str, schema: str, role: str) -> bool:
    """Take back what a grant gave `role`; whether it was a runtime role."""
    name = validate_role_name(role)
    return bool(_step(url, schema, "taskhub_revoke_runtime_role", name, guard_changed=True))


def grant_operator(url: str, schema: str, role: str) -> None:
    """Make `role` an operator of the hub: the runbook, and nothing more."""
    name = validate_role_name(role)
    _step(url, schema, "taskhub_grant_operator_role", name, guard_changed=False)


def revoke_operator(url: str, schema: str, role: str) -> bool:
    """Take back what an operator grant gave `role`; whether it was an operator."""
    name = validate_role_name(role)
    return bool(_step(url, schema, "taskhub_revoke_operator_role", name, guard_changed=False))
