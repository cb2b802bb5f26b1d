"""The runtime role a migration grants (`-x runtime_role=R`, `--runtime-role R`).

The SQL side is sql/0005_least_privilege/runtime_roles.sql; this module
validates the names and writes the statement the migrations end with.
"""

from __future__ import annotations

import re

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
