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

import hashlib
import re
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy import citus_statements, ddl_guard
from provider.deploy.privileged_fence import fenced_transaction, pin_search_path_on_one_session
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


def precheck_statement(schema: str, role: str, runtime_ddl: str) -> str:
    """Every refusal of the grant, checked before any revision runs: each
    revision commits on its own, and a run refused only at its grant would
    leave them applied. The same tests as taskhub_grant_runtime_role (whose
    words it uses), on the catalogue alone: the hub may not exist yet."""
    name, mode = validate_role_name(role), validate_runtime_ddl(runtime_ddl)
    quoted = quote_schema(schema)
    guard = "taskhub_ddl_guard_" + hashlib.md5(schema.encode()).hexdigest()[:16]
    return f"""DO $precheck$
DECLARE
    v_role  pg_catalog.pg_roles;
    v_owned text;
    v_can   boolean := false;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    SELECT * INTO v_role FROM pg_roles AS r WHERE r.rolname = '{name}';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role "{name}" does not exist' USING ERRCODE = '42704';
    END IF;
    IF v_role.rolsuper THEN
        RAISE EXCEPTION 'role {name} is a superuser: it cannot be limited to what the runtime needs'
              USING ERRCODE = '22023';
    END IF;
    IF pg_has_role(v_role.oid, 'pg_write_all_data', 'MEMBER') THEN
        RAISE EXCEPTION 'role {name} is a member of pg_write_all_data: it cannot be limited to '
                        'what the runtime needs' USING ERRCODE = '22023';
    END IF;
    -- What a role can use or become (taskhub_shares_rights), not any membership.
    IF '{name}' = current_user
       OR pg_has_role(v_role.oid, current_user, 'USAGE')
       OR pg_has_role(v_role.oid, current_user,
                      CASE WHEN current_setting('server_version_num')::integer >= 160000
                           THEN 'SET' ELSE 'MEMBER' END)
       OR (NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
           AND (pg_has_role(current_user, v_role.oid, 'USAGE')
                OR pg_has_role(current_user, v_role.oid,
                               CASE WHEN current_setting('server_version_num')::integer >= 160000
                                    THEN 'SET' ELSE 'MEMBER' END)))
    THEN
        RAISE EXCEPTION 'role {name} shares its rights with the migrating role %: use a separate '
                        'role for the runtime', current_user USING ERRCODE = '22023';
    END IF;
    SELECT o.what INTO v_owned
      FROM (SELECT 'schema ' || n.nspname AS what FROM pg_namespace AS n
             WHERE n.oid = to_regnamespace('{quoted}') AND n.nspowner = v_role.oid
            UNION ALL
            SELECT 'relation ' || c.oid::regclass::text FROM pg_class AS c
             WHERE c.relnamespace = to_regnamespace('{quoted}') AND c.relowner = v_role.oid
            UNION ALL
            SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc AS p
             WHERE p.pronamespace = to_regnamespace('{quoted}') AND p.proowner = v_role.oid) AS o
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'role {name} owns % (and maybe more) in this schema, so it cannot be '
                        'limited', v_owned USING ERRCODE = '22023';
    END IF;
    IF '{mode}' = 'guarded'
       AND NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = '{guard}')
    THEN
        -- Tried, not guessed from role names, and rolled back.
        BEGIN
            CREATE FUNCTION pg_temp.taskhub_event_trigger_probe() RETURNS event_trigger
                LANGUAGE plpgsql AS $probe$ BEGIN END $probe$;
            CREATE EVENT TRIGGER taskhub_event_trigger_probe ON ddl_command_end
                EXECUTE FUNCTION pg_temp.taskhub_event_trigger_probe();
            RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'taskhub-pg: probe rolled back';
        EXCEPTION
            WHEN insufficient_privilege THEN
                v_can := false;
            WHEN raise_exception THEN
                v_can := true;
        END;
        IF NOT v_can THEN
            RAISE EXCEPTION 'runtime_ddl ''guarded'' needs an event trigger, which role % '
                            'cannot create', current_user
                  USING ERRCODE = '42501',
                        HINT = 'Grant it as a role that can (a superuser, or the admin of a '
                               'managed service that allows event triggers), or pass '
                               'runtime_ddl=none (no CREATE: the taskhub provider and the '
                               'duroxide 0.2.2 runtime both run on a hub that exists).';
        END IF;
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
    """One role step in a fenced transaction; a step on the DDL guard first
    puts the guard's packaged body in place (where this role may: a guard
    installed by a migration's owner could not get it); on a hub distributed
    by Citus, the workers' guard follows after the commit."""
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        pin_search_path_on_one_session(conn, url)
        with fenced_transaction(conn, schema):
            if guard_changed:
                conn.execute(ddl_guard.head_body_statement(schema))
                conn.execute(ddl_guard.record_statement(schema))
            result = _call(conn, schema, function, *args)
        if guard_changed and _runs_citus(conn):
            with fenced_transaction(conn, schema):
                conn.execute(citus_statements.guard_the_workers(schema))
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
