"""Runtime and operator roles: the grant a migration ends with (`-x
runtime_role=R`, `--runtime-role R`), and the steps `taskhub-pg
grant-runtime-role`, `revoke-runtime-role`, `grant-operator-role` and
`revoke-operator-role` run.

Who does what (docs/security.md, "Who runs what"):

* the hub's owner grants on its own objects and records its own rows, with
  the hub's functions (sql/head/privileges/), in its own session;
* the runtime DDL guard needs a role that may create an event trigger; that
  role changes only the guard and the CREATE it makes safe
  (provider/deploy/ddl_guard.py), and runs nothing of the hub's: in a session
  that can do more than the owner, a role step is the guard's part alone, or
  a one-line refusal. Where the owner itself may create event triggers, its
  step does both parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy import ddl_guard, privileged_session
from provider.deploy.sql_files import read_sql, render_text
from provider.schema_name import quote_schema
from provider.standing import Standing

RUNTIME_DDL_MODES = ("guarded", "none")
# The hub's function that asks the guard (revision 0029): a hub without it
# keeps its own guard, which only its functions change.
GUARD_AWARE = "taskhub_guard_names"

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


def precheck_statement(schema: str, role: str, runtime_ddl: str, may_install_guard: bool) -> str:
    """Every refusal of a migration's grant, before any revision runs
    (sql/privileged/runtime_role_precheck.sql)."""
    text = (
        read_sql("privileged/runtime_role_precheck.sql")
        .replace("__ROLE__", validate_role_name(role))
        .replace("__RUNTIME_DDL__", validate_runtime_ddl(runtime_ddl))
        .replace("__MAY_INSTALL_GUARD__", "true" if may_install_guard else "false")
    )
    return render_text(text, schema)


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


# -- the guard's part -----------------------------------------------------


def can_create_event_triggers(conn: psycopg.Connection[Any]) -> bool:
    """Tried in a savepoint that is rolled back, not guessed from role names
    (a managed service's admin may)."""
    try:
        with conn.transaction(force_rollback=True):
            conn.execute(
                "CREATE FUNCTION pg_temp.taskhub_event_trigger_probe() RETURNS event_trigger"
                " LANGUAGE plpgsql AS $probe$ BEGIN END $probe$"
            )
            conn.execute(
                "CREATE EVENT TRIGGER taskhub_event_trigger_probe ON ddl_command_end"
                " EXECUTE FUNCTION pg_temp.taskhub_event_trigger_probe()"
            )
    except psycopg.errors.InsufficientPrivilege:
        return False
    return True


def guard(conn: psycopg.Connection[Any], schema: str, role: str, owner: str) -> list[str]:
    """The guard's part of a guarded grant, in the open transaction: the guard
    installed (or checked), the hub's own guard moved into it, `role` named,
    and the CREATE it makes safe granted. The roles moved from the hub's guard."""
    refusal = ddl_guard.refusal_for(conn, schema, role)
    if refusal is not None:
        raise ddl_guard.GuardRefused(f"refused: {refusal}")
    ddl_guard.install(conn)
    moved = ddl_guard.adopt_legacy(conn, schema, owner)
    ddl_guard.add(conn, schema, role)
    ddl_guard.grant_create(conn, schema, role)
    return moved


def unguard(conn: psycopg.Connection[Any], schema: str, role: str, owner: str) -> bool:
    """The guard's part of a revoke (or of a grant without DDL): `role` out of
    the guard's list for the hub, and the CREATE the guard's step gave taken
    back. Whether the guard named it."""
    if not ddl_guard.installed(conn) and ddl_guard.legacy_guard(conn, schema) is None:
        return False  # no guard: nothing of its to take back
    ddl_guard.install(conn)
    ddl_guard.adopt_legacy(conn, schema, owner)
    removed = ddl_guard.remove(conn, schema, role)
    if removed is not None:
        ddl_guard.revoke_create(conn, schema, role, removed)
    return removed is not None


# -- the steps --------------------------------------------------------------


@dataclass(frozen=True)
class RoleStep:
    """What a role step did, and what is left for the hub's owner."""

    schema: str
    role: str
    owner: str | None
    guard_changed: bool = False
    owner_step_done: bool = False

    def owner_step_left(self) -> bool:
        return not self.owner_step_done


def _standing(conn: psycopg.Connection[Any], schema: str) -> Standing:
    found = privileged_session.standing(conn, schema)
    privileged_session.require_clean(found)
    return found


def _require_guard_aware(conn: psycopg.Connection[Any], schema: str) -> None:
    # From the catalogue by name, never to_regprocedure: that one needs USAGE
    # on the schema, which a managed admin lacks from PostgreSQL 16.
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc AS p"
        " WHERE p.pronamespace = pg_catalog.to_regnamespace(%s) AND p.proname = %s)",
        [quote_schema(schema), GUARD_AWARE],
    ).fetchone()
    if not (row and row[0]):
        raise privileged_session.PrivilegedSessionRefused(
            f"refused: the hub in schema {schema} is at a revision before 0029,"
            " whose role functions keep a guard of their own: its owner runs taskhub-pg"
            " upgrade first"
        )


def _call(conn: psycopg.Connection[Any], schema: str, function: str, *args: str) -> Any:
    """One call of the hub's role function (the owner's session only)."""
    placeholders = sql.SQL(", ").join(sql.SQL("%s::text") for _ in args)
    query = sql.SQL("SELECT {}.{}({})").format(
        sql.Identifier(schema), sql.Identifier(function), placeholders
    )
    row = conn.execute(query, list(args)).fetchone()
    return None if row is None else row[0]


def _guard_step(
    conn: psycopg.Connection[Any], found: Standing, role: str, guarded: bool
) -> RoleStep:
    """A privileged session's role step: the guard's part, nothing of the hub's."""
    schema = found.schema
    _require_guard_aware(conn, schema)
    assert found.owner is not None
    with conn.transaction(), privileged_session.without_untrusted_event_triggers(conn):
        if guarded:
            guard(conn, schema, role, found.owner)
            changed = True
        else:
            changed = unguard(conn, schema, role, found.owner)
    ddl_guard.guard_the_workers(conn)
    return RoleStep(schema, role, found.owner, guard_changed=changed)


def _guard_part_needed(
    conn: psycopg.Connection[Any], schema: str, role: str, guarded: bool | None
) -> bool:
    """Whether the owner's step changes the guard itself: only where the guard
    is not as asked yet, and this role may create event triggers (a guard a
    superuser already made names the role: the owner's grant needs no more)."""
    if guarded is None:
        return False
    named = ddl_guard.installed(conn) and ddl_guard.names(conn, schema, role)
    legacy = ddl_guard.legacy_guard(conn, schema) is not None
    if named == guarded and not legacy:
        return False
    return can_create_event_triggers(conn)


def _owner_step(
    conn: psycopg.Connection[Any],
    found: Standing,
    verb: str,
    call: tuple[str, ...],
    guarded: bool | None,
) -> tuple[RoleStep, Any]:
    """The owner's role step: the hub's function (`call`: its name, then its
    arguments, the role first), after the guard's part where this role may
    create event triggers (guarded None: an operator's step, no guard)."""
    schema, role = found.schema, call[1]
    privileged_session.refuse_privileged(found, verb)
    changed = False
    with conn.transaction():
        if _guard_part_needed(conn, schema, role, guarded):
            owner = found.owner or found.login
            if guarded:
                _require_guard_aware(conn, schema)
                guard(conn, schema, role, owner)
                changed = True
            else:
                changed = unguard(conn, schema, role, owner)
        result = _call(conn, schema, *call)
    if changed:
        ddl_guard.guard_the_workers(conn)
    return RoleStep(schema, role, found.owner, changed, owner_step_done=True), result


def grant(url: str, schema: str, role: str, runtime_ddl: str = "guarded") -> RoleStep:
    """Make `role` a runtime role of the hub (again: a second grant replaces the
    first). In a privileged session, the guard's part only."""
    name, mode = validate_role_name(role), validate_runtime_ddl(runtime_ddl)
    with privileged_session.one_session(url) as conn:
        found = _standing(conn, schema)
        if found.privileged:
            return _guard_step(conn, found, name, guarded=mode == "guarded")
        call = ("taskhub_grant_runtime_role", name, mode)
        step, _ = _owner_step(conn, found, "grant-runtime-role", call, mode == "guarded")
        return step


def revoke(url: str, schema: str, role: str) -> tuple[RoleStep, bool]:
    """Take back what a grant gave `role`; whether it was a runtime role (or,
    in a privileged session, whether the guard named it)."""
    name = validate_role_name(role)
    with privileged_session.one_session(url) as conn:
        found = _standing(conn, schema)
        if found.privileged:
            step = _guard_step(conn, found, name, guarded=False)
            return step, step.guard_changed
        call = ("taskhub_revoke_runtime_role", name)
        step, was = _owner_step(conn, found, "revoke-runtime-role", call, guarded=False)
        return step, bool(was)


def grant_operator(url: str, schema: str, role: str) -> None:
    """Make `role` an operator of the hub: the runbook, and nothing more."""
    name = validate_role_name(role)
    with privileged_session.one_session(url) as conn:
        found = _standing(conn, schema)
        call = ("taskhub_grant_operator_role", name)
        _owner_step(conn, found, "grant-operator-role", call, guarded=None)


def revoke_operator(url: str, schema: str, role: str) -> bool:
    """Take back what an operator grant gave `role`; whether it was an operator."""
    name = validate_role_name(role)
    with privileged_session.one_session(url) as conn:
        found = _standing(conn, schema)
        call = ("taskhub_revoke_operator_role", name)
        _, was = _owner_step(conn, found, "revoke-operator-role", call, guarded=None)
        return bool(was)
