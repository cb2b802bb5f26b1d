"""The database's runtime DDL guard: the steps that change it.

A guarded runtime role holds CREATE on its hub's schema and database (the
released duroxide runtime runs `CREATE SCHEMA IF NOT EXISTS` and `CREATE
TABLE IF NOT EXISTS` when it connects, and PostgreSQL checks the privilege
before it sees that the object exists), and an event trigger refuses every
statement of that role that would really create something.

An event trigger needs a role that may create one: a superuser, or a managed
service's admin that the service lets. Such a role trusts nothing a hub's
owner controls, so the guard is the installing role's own (sql/guard/): a
schema, taskhub_guard, holding the list of guarded roles (by hub) and the
trigger's function, and the event trigger taskhub_runtime_ddl_guard. A step
changes it only when every object of that schema belongs to a role the
session trusts (a superuser, or the session's login); it writes the list,
creates or drops the trigger, and grants or takes back the CREATE. It calls
nothing of the hub's, and reads only the catalogue and the guard's list.

The hub's owner asks the guard before its own grant gives a guarded role
CREATE (taskhub_guard_names, revision 0029): the guard is what makes that
CREATE safe.

Revisions 0005-0028 kept a guard per hub inside the hub's schema
(sql/privileged/legacy_guard.sql); the first step on such a hub moves its
roles here and drops its event trigger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy.privileged_session import PrivilegedSessionRefused
from provider.deploy.sql_files import read_sql, render_text
from provider.resources import sql_dir
from provider.schema_name import quote_schema

SCHEMA = "taskhub_guard"
EVENT_TRIGGER = "taskhub_runtime_ddl_guard"
FUNCTION = f"{SCHEMA}.refuse_runtime_ddl()"
# The guard's own files, applied in the order of their names.
FOLDER = "guard"


class GuardRefused(PrivilegedSessionRefused):
    """The guard cannot be changed by this session: one line, nothing changed."""


def install_statements() -> list[str]:
    """sql/guard/*.sql, in order: each creates what is missing (IF NOT EXISTS,
    OR REPLACE), so a step runs them every time."""
    return [
        read_sql(f"{FOLDER}/{path.name}") for path in sorted((sql_dir() / FOLDER).glob("*.sql"))
    ]


def _query(name: str, schema: str) -> str:
    return render_text(read_sql(f"privileged/{name}.sql"), schema)


def install(conn: psycopg.Connection[Any]) -> None:
    """Create or refresh the guard's schema, list and function, in the open
    transaction, where this session may trust all of it: checked before (a
    guard another role made is not touched) and after (what this transaction
    created, no other session sees before the commit)."""
    _require_trusted(conn)
    for statement in install_statements():
        conn.execute(statement)
    _require_trusted(conn)


def _require_trusted(conn: psycopg.Connection[Any]) -> None:
    untrusted = conn.execute(read_sql("privileged/guard_owners_not_trusted.sql")).fetchall()
    if untrusted:
        what, role = untrusted[0]
        raise GuardRefused(
            f"refused: {what} belongs to role {role}, which may change the DDL"
            f" guard that this step would write: run the step as {role}, or remove it"
        )


def installed(conn: psycopg.Connection[Any]) -> bool:
    """Whether the database has the guard's list (whoever made it)."""
    row = conn.execute(
        "SELECT pg_catalog.to_regclass('taskhub_guard.guarded_roles') IS NOT NULL"
    ).fetchone()
    return bool(row and row[0])


def refusal_for(conn: psycopg.Connection[Any], schema: str, role: str) -> str | None:
    """Why `role` cannot be a guarded runtime role of the hub (None: it can)."""
    row = conn.execute(_query("runtime_role_refusal", schema), {"role": role}).fetchone()
    return None if row is None else str(row[0])


def names(conn: psycopg.Connection[Any], schema: str, role: str) -> bool:
    """Whether the guard names `role` for the hub (its list, installed first)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM taskhub_guard.guarded_roles"
        "                WHERE hub_schema = %s AND role_name = %s)",
        [schema, role],
    ).fetchone()
    return bool(row and row[0])


def add(conn: psycopg.Connection[Any], schema: str, role: str) -> None:
    """Name `role` in the guard's list, and make sure the trigger fires."""
    conn.execute(
        "INSERT INTO taskhub_guard.guarded_roles"
        "       (hub_schema, role_name, had_database_create, guarded_at)"
        " VALUES (%s, %s,"
        "         pg_catalog.has_database_privilege(%s, pg_catalog.current_database(), 'CREATE'),"
        "         pg_catalog.now())"
        " ON CONFLICT (hub_schema, role_name) DO NOTHING",
        [schema, role, role],
    )
    row = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_event_trigger WHERE evtname = %s", [EVENT_TRIGGER]
    ).fetchone()
    if row is None:
        conn.execute(
            sql.SQL("CREATE EVENT TRIGGER {} ON ddl_command_end EXECUTE FUNCTION {}").format(
                sql.Identifier(EVENT_TRIGGER), sql.SQL(FUNCTION)
            )
        )


@dataclass(frozen=True)
class Removed:
    had_database_create: bool
    still_guarded_elsewhere: bool


def remove(conn: psycopg.Connection[Any], schema: str, role: str) -> Removed | None:
    """Take `role` out of the guard's list for the hub (None: it was not in
    it); drop the trigger when the list is empty."""
    row = conn.execute(
        "DELETE FROM taskhub_guard.guarded_roles WHERE hub_schema = %s AND role_name = %s"
        " RETURNING had_database_create",
        [schema, role],
    ).fetchone()
    counts = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE role_name = %s)  FROM taskhub_guard.guarded_roles",
        [role],
    ).fetchone()
    assert counts is not None
    if counts[0] == 0:
        conn.execute(
            sql.SQL("DROP EVENT TRIGGER IF EXISTS {}").format(sql.Identifier(EVENT_TRIGGER))
        )
    if row is None:
        return None
    return Removed(bool(row[0]), bool(counts[1]))


def grant_create(conn: psycopg.Connection[Any], schema: str, role: str) -> None:
    """The CREATE a guarded role needs: on the hub's schema, and on the
    database (but for a hub in public, which exists already)."""
    who = sql.Identifier(role)
    conn.execute(sql.SQL("GRANT CREATE ON SCHEMA {} TO {}").format(sql.Identifier(schema), who))
    if schema != "public":
        conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(_database(conn), who))


def revoke_create(conn: psycopg.Connection[Any], schema: str, role: str, removed: Removed) -> None:
    """Take back the CREATE the guard's step gave: on the database only where
    the role did not hold it before, and no other hub's guard needs it."""
    who = sql.Identifier(role)
    exists = conn.execute(
        "SELECT pg_catalog.to_regnamespace(%s) IS NOT NULL", [quote_schema(schema)]
    ).fetchone()
    if exists and exists[0]:
        conn.execute(
            sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(sql.Identifier(schema), who)
        )
    if schema != "public" and not (removed.had_database_create or removed.still_guarded_elsewhere):
        conn.execute(sql.SQL("REVOKE CREATE ON DATABASE {} FROM {}").format(_database(conn), who))


def _database(conn: psycopg.Connection[Any]) -> sql.Identifier:
    row = conn.execute("SELECT pg_catalog.current_database()").fetchone()
    assert row is not None
    return sql.Identifier(str(row[0]))


def forget_hub(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Take every role of the hub out of the guard, with the CREATE its step
    gave, where this session may change the guard (a migration's downgrade
    below 0005, where runtime roles end): the roles taken out."""
    if not installed(conn):
        return []
    if conn.execute(read_sql("privileged/guard_owners_not_trusted.sql")).fetchone():
        return []  # another role's guard: its own steps take the roles out
    rows = conn.execute(
        "SELECT role_name FROM taskhub_guard.guarded_roles WHERE hub_schema = %s ORDER BY 1",
        [schema],
    ).fetchall()
    forgotten = []
    for (role,) in rows:
        removed = remove(conn, schema, str(role))
        exists = conn.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", [role])
        if removed is not None and exists.fetchone() is not None:
            revoke_create(conn, schema, str(role), removed)
        forgotten.append(str(role))
    return forgotten


@dataclass(frozen=True)
class LegacyGuard:
    name: str
    function: str
    trusted: bool
    roles: list[str]


def legacy_guard(conn: psycopg.Connection[Any], schema: str) -> LegacyGuard | None:
    row = conn.execute(_query("legacy_guard", schema)).fetchone()
    if row is None:
        return None
    name, function, trusted, roles = row
    return LegacyGuard(str(name), str(function), bool(trusted), [str(r) for r in roles])


def adopt_legacy(conn: psycopg.Connection[Any], schema: str, owner: str) -> list[str]:
    """Move the hub's own guard (revisions 0005-0028) into the database's:
    its roles named here, its event trigger dropped, its function given back
    to the hub's owner without its list. The roles moved."""
    legacy = legacy_guard(conn, schema)
    if legacy is None:
        return []
    if not legacy.trusted:
        raise GuardRefused(
            f"refused: the DDL guard of schema {schema} ({legacy.name}) belongs to"
            " a role this session cannot trust, which may have changed its list: move it as"
            " the role that made it"
        )
    moved = []
    for role in legacy.roles:
        exists = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", [role]
        ).fetchone()
        if exists is not None:
            # CREATE on the database was given by the hub's own grant, which
            # keeps the record of it: never taken back from here.
            conn.execute(
                "INSERT INTO taskhub_guard.guarded_roles"
                "       (hub_schema, role_name, had_database_create, guarded_at)"
                " VALUES (%s, %s, true, pg_catalog.now())"
                " ON CONFLICT (hub_schema, role_name) DO NOTHING",
                [schema, role],
            )
            moved.append(role)
    function = sql.SQL(legacy.function)  # regprocedure text: qualified and quoted
    conn.execute(sql.SQL("DROP EVENT TRIGGER {}").format(sql.Identifier(legacy.name)))
    conn.execute(sql.SQL("ALTER FUNCTION {} RESET ALL").format(function))
    conn.execute(
        sql.SQL("ALTER FUNCTION {} SET search_path = pg_catalog, pg_temp").format(function)
    )
    conn.execute(sql.SQL("COMMENT ON FUNCTION {} IS NULL").format(function))
    conn.execute(sql.SQL("ALTER FUNCTION {} OWNER TO {}").format(function, sql.Identifier(owner)))
    if moved:
        row = conn.execute(
            "SELECT 1 FROM pg_catalog.pg_event_trigger WHERE evtname = %s", [EVENT_TRIGGER]
        ).fetchone()
        if row is None:
            add(conn, schema, moved[0])
    return moved


def _on_citus_coordinator(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT pg_catalog.to_regclass('pg_catalog.pg_dist_node') IS NOT NULL"
        "   AND pg_catalog.to_regclass('taskhub_guard.guarded_roles') IS NOT NULL"
    ).fetchone()
    return bool(row and row[0])


def worker_script(conn: psycopg.Connection[Any]) -> str:
    """What makes a worker's guard the same as this node's, as one script (one
    transaction on the worker's own session, which this node's checks do not
    see): search_path pinned and the session refused if another role
    configured it (sql/privileged/worker_session_refusal.sql), the guard's
    owners checked, its files, its owners checked again, its whole list, and
    its trigger there or not."""
    trusted = (
        "DO $trusted$ BEGIN IF EXISTS (\n"
        + read_sql("privileged/guard_owners_not_trusted.sql")
        + "\n) THEN RAISE EXCEPTION 'refused: on this worker the DDL guard''s schema"
        " or an object in it belongs to a role this step cannot trust';"
        " END IF; END $trusted$"
    )
    steps = [
        read_sql("privileged/worker_session_refusal.sql"),
        trusted,
        *install_statements(),
        trusted,
        *worker_statements(conn),
    ]
    return "\n".join(step.strip().rstrip(";") + ";" for step in steps)


def worker_statements(conn: psycopg.Connection[Any]) -> list[str]:
    """The worker's list and trigger: the guard's whole list, and its trigger
    there or not (the end of worker_script)."""
    rows = conn.execute(
        "SELECT hub_schema, role_name, had_database_create, guarded_at"
        "  FROM taskhub_guard.guarded_roles ORDER BY 1, 2"
    ).fetchall()
    listed: sql.Composable = sql.SQL("DELETE FROM taskhub_guard.guarded_roles")
    if rows:
        values = sql.SQL(", ").join(
            sql.SQL("({}, {}, {}, {})").format(*map(sql.Literal, row)) for row in rows
        )
        listed = sql.SQL("{}; INSERT INTO taskhub_guard.guarded_roles VALUES {}").format(
            listed, values
        )
    trigger: sql.Composable = sql.SQL(
        "DO $guard$ BEGIN"
        " IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger WHERE evtname = {name}) THEN"
        " CREATE EVENT TRIGGER {trigger} ON ddl_command_end EXECUTE FUNCTION {function};"
        " END IF; END $guard$"
    ).format(
        name=sql.Literal(EVENT_TRIGGER),
        trigger=sql.Identifier(EVENT_TRIGGER),
        function=sql.SQL(FUNCTION),
    )
    if not rows:
        trigger = sql.SQL("DROP EVENT TRIGGER IF EXISTS {}").format(sql.Identifier(EVENT_TRIGGER))
    return [listed.as_string(conn), trigger.as_string(conn)]


def guard_the_workers(conn: psycopg.Connection[Any]) -> None:
    """On a Citus coordinator, the guard goes on every worker as well (an event
    trigger is a node's own, and a hub's schema may move to any node): sent
    after the commit by Citus's run_command_on_workers, whose connections see
    only what is committed. Elsewhere, nothing."""
    if not _on_citus_coordinator(conn):
        return
    for node, port, success, result in conn.execute(
        "SELECT nodename, nodeport, success, result FROM pg_catalog.run_command_on_workers(%s)",
        [worker_script(conn)],
    ).fetchall():
        if not success:
            raise GuardRefused(f"the DDL guard could not be put on worker {node}:{port}: {result}")
