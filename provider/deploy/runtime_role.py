"""The runtime role a migration grants (`-x runtime_role=R`, `--runtime-role R`).

The SQL side is sql/head/privileges/ (taskhub_grant_runtime_role.sql and its
siblings); this module validates the names and writes the statement the
migrations end with.
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
