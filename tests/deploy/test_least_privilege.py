"""Least privilege: `upgrade -x runtime_role=R` gives R exactly what a runtime
needs and nothing more.

The full workloads run elsewhere as such a role: the whole provider
validation suite (tests/validation, runtime_ddl=none) and the duroxide 0.2.2
runtime (tests/runtime/test_duroxide_runtime.py, the default runtime_ddl=guarded).
Here: what R holds, and what R is refused: DDL, other schemas, direct writes,
internal and operator functions. And a caller's search_path cannot redirect
the procedures.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from devkit.workloads.work_items import start_orchestration
from provider import now_ms
from provider.deploy import migrate, runtime_role
from provider.deploy.runtime_role import grant_statement
from provider.deploy.version_table import installed_revision
from tests.support import drift
from tests.support.alembic_cli import alembic
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2, Flavour
from tests.support.owned_hubs import take_back_create_on_public

RUNTIME_TABLES = {"instances", "executions", "_duroxide_migrations"}
OPERATOR_FUNCTIONS = {
    "taskhub_requeue_dead_letter",
    "taskhub_release_orchestration_lease",
    "taskhub_find_instances",
    "taskhub_prune_ended",
    # 0023: the messages an operator may send, built by the hub; a release without a delay.
    "taskhub_cancel_instance",
    "taskhub_raise_event",
    "taskhub_release_work_item_lease",
    # 0026: retention asks how far behind the dispatchers are.
    "taskhub_dispatch_lag_ms",
    # 0028: the search by id prefix and a part of the name.
    "taskhub_search_instances",
    # 0029: flow control, changed and read by the owner and operators only.
    "taskhub_pause_flow",
    "taskhub_resume_flow",
    "taskhub_set_flow_limit",
    "taskhub_remove_flow_limit",
    "taskhub_set_flow_rate",
    "taskhub_remove_flow_rate",
    "taskhub_read_flow_rules",
    # 0029: restart an ended instance, read the record of restarts.
    "taskhub_restart_instance",
    "taskhub_read_restarts",
}


@pytest.fixture
def role(database_url: str) -> Iterator[LoginRole]:
    with login_role(database_url) as login:
        yield login


@pytest.fixture
def guarded_schema(database_url: str, role: LoginRole) -> Iterator[str]:
    """A hub whose runtime role is `role`, in the default mode (runtime_ddl=guarded)."""
    schema = new_schema_name("lp")
    migrate.upgrade(database_url, schema, runtime_role=role.name)
    yield schema
    # Dropping the role later takes its grants; this drops the DDL guard too.
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'SELECT "{schema}".taskhub_revoke_runtime_role(%s)', [role.name])


@pytest.fixture
def as_role(role: LoginRole) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(role.url, autocommit=True) as conn:
        yield conn


@dataclass(frozen=True)
class GuardedHub:
    schema: str
    as_role: psycopg.Connection[Any]


@pytest.fixture(scope="module")
def shared_guarded_hub(database_url: str) -> Iterator[GuardedHub]:
    """One guarded hub and its role's connection for the refusal tests of
    this module: each statement is refused and changes nothing, so they
    share it (a hub migrated with a role costs 2-4 s a test under load)."""
    with login_role(database_url) as login:
        schema = new_schema_name("lp")
        migrate.upgrade(database_url, schema, runtime_role=login.name)
        try:
            with psycopg.connect(login.url, autocommit=True) as conn:
                yield GuardedHub(schema, conn)
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f'SELECT "{schema}".taskhub_revoke_runtime_role(%s)', [login.name])


def guard_names(sql: psycopg.Connection[Any], schema: str, role: str) -> bool:
    """Whether the database's DDL guard names `role` for the hub in `schema`."""
    if sql.execute("SELECT to_regclass('taskhub_guard.guarded_roles')").fetchone() == (None,):
        return False
    row = sql.execute(
        "SELECT count(*) FROM taskhub_guard.guarded_roles WHERE hub_schema = %s AND role_name = %s",
        [schema, role],
    ).fetchone()
    return bool(row and row[0])


def refusal(conn: psycopg.Connection[Any], statement: str) -> str | None:
    """The SQLSTATE the statement fails with, or None if it succeeds."""
    try:
        conn.execute(statement)
    except psycopg.Error as error:
        return error.sqlstate
    return None


HOT_PATH_PLANNER_SETTINGS = {
    "plan_cache_mode=force_generic_plan",
    "enable_seqscan=off",
    "enable_bitmapscan=off",  # 0026: a bitmap scan leaves dead index entries unmarked
    "jit=off",
}
# taskhub_find_instances and _search_instances plan each call with the filters given.
OPERATOR_PLANNER_SETTINGS = {"plan_cache_mode=force_custom_plan"}


def runtime_functions(sql: psycopg.Connection[Any], schema: str) -> set[str]:
    rows = sql.execute(
        f'SELECT object_name FROM "{schema}".taskhub_runtime_privileges'
        " WHERE object_kind = 'function'"
    ).fetchall()
    return {name for (name,) in rows}


def test_procedures_run_as_owner_with_a_pinned_search_path_and_no_public_execute(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    rows = sql.execute(
        """SELECT p.proname, p.prosecdef, p.proconfig,
                  EXISTS (SELECT 1
                            FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
                           WHERE a.grantee = 0) AS public_execute
             FROM pg_proc AS p
            WHERE p.pronamespace = %s::regnamespace""",
        [hub_schema],
    ).fetchall()
    definers = {name for name, definer, _, _ in rows if definer}
    assert definers == runtime_functions(sql, hub_schema) | OPERATOR_FUNCTIONS
    for name, definer, config, public_execute in rows:
        assert not public_execute, name
        if definer:
            # The search_path is pinned first; the hot-path procedures also
            # fix their planner settings (revision 0006), nothing else.
            assert config[0] == "search_path=pg_catalog, pg_temp", name
            allowed = OPERATOR_PLANNER_SETTINGS if name in OPERATOR_FUNCTIONS else set()
            assert set(config[1:]) <= HOT_PATH_PLANNER_SETTINGS | allowed, name
    assert "cleanup_schema" not in definers


def test_the_role_holds_exactly_the_listed_privileges(
    guarded_schema: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    executable = sql.execute(
        "SELECT DISTINCT p.proname FROM pg_proc AS p"
        " WHERE p.pronamespace = %s::regnamespace AND has_function_privilege(%s, p.oid, 'EXECUTE')",
        [guarded_schema, role.name],
    ).fetchall()
    assert {name for (name,) in executable} == runtime_functions(sql, guarded_schema)

    table_privileges = sql.execute(
        """SELECT c.relname, p.privilege
             FROM pg_class AS c
            CROSS JOIN unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE',
                                    'REFERENCES', 'TRIGGER']) AS p(privilege)
            WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'v', 'p')
              AND has_table_privilege(%s, c.oid, p.privilege)""",
        [guarded_schema, role.name],
    ).fetchall()
    assert set(table_privileges) == {(table, "SELECT") for table in RUNTIME_TABLES}

    schema_and_database = sql.execute(
        "SELECT has_schema_privilege(%s, %s, 'USAGE'), has_schema_privilege(%s, %s, 'CREATE'),"
        " has_database_privilege(%s, current_database(), 'CREATE')",
        [role.name, guarded_schema, role.name, guarded_schema, role.name],
    ).fetchone()
    # CREATE only because the duroxide runtime's connect asks for it; the guard
    # (below) refuses anything that would really create an object.
    assert schema_and_database == (True, True, True)


def test_runtime_ddl_none_grants_no_create_and_installs_no_guard(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("lp")
    migrate.upgrade(database_url, schema, runtime_role=role.name, runtime_ddl="none")
    row = sql.execute(
        "SELECT has_schema_privilege(%s, %s, 'USAGE'), has_schema_privilege(%s, %s, 'CREATE'),"
        " has_database_privilege(%s, current_database(), 'CREATE')",
        [role.name, schema, role.name, schema, role.name],
    ).fetchone()
    assert row == (True, False, False)
    assert not guard_names(sql, schema, role.name)
    with psycopg.connect(role.url, autocommit=True) as conn:
        assert refusal(conn, f'CREATE TABLE "{schema}".mine (x int)') == "42501"


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at)"
        " VALUES ('x', '{{}}', now(), now())",
        "INSERT INTO {s}.worker_queue (work_item, visible_at, created_at)"
        " VALUES ('{{}}', now(), now())",
        "UPDATE {s}.instance_locks SET locked_until = 0",
        "UPDATE {s}.instances SET orchestration_name = 'x'",
        "DELETE FROM {s}.history",
        "DELETE FROM {s}.worker_queue",
        "TRUNCATE {s}.orchestrator_queue",
        "INSERT INTO {s}._duroxide_migrations (version, name) VALUES (99, 'mine')",
        "UPDATE {s}.taskhub_settings SET value = '1'",
        "DELETE FROM {s}.dead_letters",
        "INSERT INTO {s}.taskhub_runtime_roles VALUES ('someone', 'none', false, now())",
        "SELECT * FROM {s}.instance_locks",
        "SELECT * FROM {s}.kv_store",
        "SELECT * FROM {s}.taskhub_queue_health",
    ],
    ids=lambda statement: " ".join(statement.split()[:3]),
)
def test_direct_reads_and_writes_the_runtime_does_not_need_are_refused(
    shared_guarded_hub: GuardedHub, statement: str
) -> None:
    hub = shared_guarded_hub
    assert refusal(hub.as_role, statement.format(s=f'"{hub.schema}"')) == "42501"


@pytest.mark.parametrize(
    "call",
    [
        "cleanup_schema()",
        "taskhub_clock_ms(0)",
        "taskhub_requeue_dead_letter(1)",
        "taskhub_release_orchestration_lease('x')",
        "taskhub_prune_ended(0, 1)",
        "taskhub_grant_runtime_role('postgres', 'none')",
        "taskhub_revoke_runtime_role('postgres')",
        "taskhub_set_aside_functions(ARRAY['fetch_work_item'])",
        "taskhub_restore_functions(ARRAY['fetch_work_item'])",
    ],
)
def test_internal_operator_and_migration_functions_are_refused(
    shared_guarded_hub: GuardedHub, call: str
) -> None:
    hub = shared_guarded_hub
    assert refusal(hub.as_role, f'SELECT "{hub.schema}".{call}') == "42501"


@pytest.mark.parametrize(
    "statement",
    [
        "CREATE TABLE {s}.mine (x int)",
        "CREATE VIEW {s}.mine AS SELECT 1",
        "CREATE FUNCTION {s}.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "CREATE SCHEMA mine_{u}",
        "CREATE TEMP TABLE mine (x int)",
        "CREATE INDEX mine ON {s}.instances (orchestration_name)",
        "ALTER TABLE {s}.instances ADD COLUMN mine int",
        "DROP TABLE {s}.history",
        "DROP FUNCTION {s}.fetch_work_item",
        "CREATE OR REPLACE FUNCTION {s}.ack_worker() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    ],
    ids=lambda statement: " ".join(statement.split()[:3]),
)
def test_ddl_is_refused(shared_guarded_hub: GuardedHub, statement: str) -> None:
    hub = shared_guarded_hub
    sql_text = statement.format(s=f'"{hub.schema}"', u=hub.schema)
    assert refusal(hub.as_role, sql_text) == "42501"
    assert hub.as_role.execute(
        "SELECT count(*) FROM pg_class WHERE relname = 'mine'"
        " UNION ALL SELECT count(*) FROM pg_proc WHERE proname = 'mine'"
        " UNION ALL SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'mine%%'"
    ).fetchall() == [(0,), (0,), (0,)]


def test_the_duroxide_runtimes_connect_time_statements_pass(
    guarded_schema: str, as_role: psycopg.Connection[Any]
) -> None:
    """What duroxide 0.2.2's migration runner runs on every connect."""
    schema = f'"{guarded_schema}"'
    assert refusal(as_role, f"CREATE SCHEMA IF NOT EXISTS {schema}") is None
    assert (
        refusal(
            as_role,
            f"CREATE TABLE IF NOT EXISTS {schema}._duroxide_migrations"
            " (version BIGINT PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP)",
        )
        is None
    )
    assert as_role.execute(f"SELECT count(*) FROM {schema}._duroxide_migrations").fetchone() == (
        23,
    )


@pytest.mark.parametrize("table", sorted(RUNTIME_TABLES))
def test_each_granted_table_is_needed_by_the_duroxide_runtime(
    guarded_schema: str, role: LoginRole, sql: psycopg.Connection[Any], table: str
) -> None:
    """Without its SELECT, the runtime cannot connect or its bulk management fails."""
    sql.execute(f'REVOKE SELECT ON "{guarded_schema}".{table} FROM {role.name}')
    try:
        provider = duroxide.PostgresProvider.connect_with_schema(role.url, guarded_schema)
        client = duroxide.Client(provider)
        client.delete_instance_bulk(duroxide.InstanceFilter(instance_ids=["nobody"]))
        client.prune_executions_bulk(
            duroxide.InstanceFilter(instance_ids=["nobody"]), duroxide.PruneOptions(keep_last=1)
        )
    except Exception as error:  # duroxide raises plain exceptions with the server's message
        assert f"permission denied for table {table}" in str(error)
    else:
        pytest.fail(f"the runtime did not need SELECT on {table}")


def test_other_schemas_are_out_of_reach(
    database_url: str, guarded_schema: str, as_role: psycopg.Connection[Any]
) -> None:
    other = new_schema_name("lp")
    migrate.upgrade(database_url, other)
    for statement in (
        f'SELECT * FROM "{other}".fetch_work_item(0, 1000)',
        f'SELECT * FROM "{other}".instances',
        f'CREATE TABLE "{other}".mine (x int)',
        "CREATE TABLE public.mine (x int)",
    ):
        assert refusal(as_role, statement) == "42501", statement


def test_granting_a_role_that_could_not_be_limited_is_refused_and_changes_nothing(
    database_url: str, hub_schema: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    schema = f'"{hub_schema}"'
    sql.execute(f"CREATE TABLE {schema}.owned_by_runtime (x int)")
    sql.execute(f"ALTER TABLE {schema}.owned_by_runtime OWNER TO {role.name}")
    with login_role(database_url, prefix="writer") as writer:
        sql.execute(f"GRANT pg_write_all_data TO {writer.name}")
        cases = {
            "postgres": "22023",  # a superuser
            "no_such_role_anywhere": "42704",
            role.name: "22023",  # owns a table in the schema
            writer.name: "22023",  # may write every table anyway
        }
        for candidate, sqlstate in cases.items():
            with pytest.raises(psycopg.Error) as refused:
                sql.execute(f"SELECT {schema}.taskhub_grant_runtime_role(%s)", [candidate])
            assert refused.value.sqlstate == sqlstate, candidate
    with pytest.raises(psycopg.Error) as bad_mode:
        sql.execute(f"SELECT {schema}.taskhub_grant_runtime_role(%s, 'everything')", ["postgres"])
    assert bad_mode.value.sqlstate == "22023"
    assert sql.execute(f"SELECT count(*) FROM {schema}.taskhub_runtime_roles").fetchone() == (0,)
    assert sql.execute(
        "SELECT has_schema_privilege(%s, %s, 'USAGE')", [role.name, hub_schema]
    ).fetchone() == (False,)


def test_a_non_superuser_migrator_cannot_install_the_guard_but_can_grant_without_create(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    with login_role(database_url, prefix="owner") as owner:
        database = sql.execute("SELECT current_database()").fetchone()
        sql.execute(f'GRANT CREATE ON DATABASE "{database[0] if database else ""}" TO {owner.name}')
        schema = new_schema_name("lp")
        with pytest.raises(Exception, match="needs the DDL guard to name role"):
            migrate.upgrade(owner.url, schema, runtime_role=role.name)
        # Refused before any revision ran: nothing of it is left.
        assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)
        migrate.upgrade(owner.url, schema, runtime_role=role.name, runtime_ddl="none")
        assert sql.execute(
            "SELECT has_function_privilege(%s, %s, 'EXECUTE')",
            [role.name, f'"{schema}".fetch_work_item(bigint,bigint,text,bigint,text[],text)'],
        ).fetchone() == (True,)
        migrate.downgrade(owner.url, schema)


def test_revoking_and_downgrading_take_everything_back(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("lp")
    migrate.upgrade(database_url, schema, runtime_role=role.name)
    assert guard_names(sql, schema, role.name)
    migrate.downgrade(database_url, schema, "0004")
    row = sql.execute(
        "SELECT has_schema_privilege(%s, %s, 'USAGE'),"
        " has_database_privilege(%s, current_database(), 'CREATE'),"
        " (SELECT count(*) FROM pg_proc WHERE pronamespace = %s::regnamespace AND prosecdef)",
        [role.name, schema, role.name, schema],
    ).fetchone()
    assert row == (False, False, 0)
    # Below 0005 the hub has no runtime roles: a downgrade by a role that may
    # change the database's guard takes them out of it too.
    assert not guard_names(sql, schema, role.name)
    migrate.downgrade(database_url, schema)
    assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)


def test_runtime_role_needs_revision_0005(database_url: str, role: LoginRole) -> None:
    schema = new_schema_name("lp")
    with pytest.raises(psycopg.Error, match="revision 0005 or later"):
        migrate.upgrade(database_url, schema, "0004", runtime_role=role.name)
    assert "taskhub_grant_runtime_role" in grant_statement(schema, role.name, "guarded")


EVIL_FUNCTIONS = [
    "clock_timestamp() RETURNS timestamptz",
    "now() RETURNS timestamptz",
    "hashtext(text) RETURNS integer",
    "hashtextextended(text, bigint) RETURNS bigint",
    "pg_try_advisory_xact_lock(bigint) RETURNS boolean",
    "pg_advisory_xact_lock(bigint) RETURNS void",
    "gen_random_uuid() RETURNS uuid",
]


@pytest.fixture
def evil_schema(sql: psycopg.Connection[Any]) -> Iterator[str]:
    """Functions that shadow what procedures call, for callers that put them first."""
    schema = new_schema_name("evil")
    sql.execute(f"CREATE SCHEMA {schema}")
    sql.execute(f"GRANT USAGE ON SCHEMA {schema} TO PUBLIC")
    for signature in EVIL_FUNCTIONS:
        sql.execute(
            f"CREATE FUNCTION {schema}.{signature} LANGUAGE plpgsql AS"
            " $$BEGIN RAISE EXCEPTION 'redirected by the caller''s search_path'; END$$"
        )
    yield schema
    sql.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.pins_defect(
    "duroxide 0.2.2's procedures do not pin search_path", fails_on=(DUROXIDE_0_2_2.name,)
)
def test_a_callers_search_path_cannot_redirect_the_procedures(
    flavour: Flavour, flavour_schema: str, database_url: str, evil_schema: str
) -> None:
    schema = f'"{flavour_schema}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"SET search_path = {evil_schema}, pg_catalog")
        conn.execute(
            f"SELECT {schema}.enqueue_orchestrator_work(%s, %s, pg_catalog.now())",
            ["redirect-1", json.dumps(start_orchestration("redirect-1"))],
        )
        row = conn.execute(
            f"SELECT out_instance_id FROM {schema}.fetch_orchestration_item(%s, 30000)", [now_ms()]
        ).fetchone()
    assert row == ("redirect-1",)


def test_the_alembic_command_line_grants_the_runtime_role(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("lp")
    run = alembic(
        "-x", f"schema={schema}", "-x", f"runtime_role={role.name}", "-x", "runtime_ddl=none",
        "upgrade", "head", url=database_url,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = sql.execute(
        f'SELECT role_name, runtime_ddl FROM "{schema}".taskhub_runtime_roles'
    ).fetchall()
    assert rows == [(role.name, "none")]

    offline = alembic(
        "-x", "schema=dba_hub", "-x", "runtime_role=hub_runtime", "upgrade", "head", "--sql",
        url="",
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert "taskhub_grant_runtime_role(\n        'hub_runtime', 'guarded')" in offline.stdout


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("runtime_role=x'; DROP TABLE y; --", "invalid runtime role name"),
        ("runtime_ddl=everything", "invalid runtime_ddl"),
        ("lock_timout_ms=50", "unknown option -x lock_timout_ms"),
    ],
)
def test_the_command_line_refuses_bad_role_arguments_and_creates_nothing(
    database_url: str, sql: psycopg.Connection[Any], argument: str, message: str
) -> None:
    schema = new_schema_name("lp")
    extra = [] if argument.startswith("runtime_role") else ["-x", "runtime_role=someone"]
    run = alembic(
        "-x", f"schema={schema}", "-x", argument, *extra, "upgrade", "head", url=database_url
    )  # fmt: skip
    assert run.returncode != 0
    assert message in run.stderr
    assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)


def test_in_the_public_schema_the_duroxide_runtime_connects_without_database_create(
    role: LoginRole, fresh_database: str
) -> None:
    """duroxide's default schema: its connect creates no schema there, so the
    role gets CREATE on `public` only, and the guard refuses real DDL."""
    take_back_create_on_public(fresh_database)  # a superuser migrates it (PostgreSQL 14)
    migrate.upgrade(fresh_database, "public", runtime_role=role.name)
    role_url = role.url_on(fresh_database)
    provider = duroxide.PostgresProvider.connect(role_url)
    assert duroxide.Client(provider).list_all_instances() == []
    with psycopg.connect(role_url, autocommit=True) as conn:
        privileges = conn.execute(
            "SELECT has_database_privilege(current_user, current_database(), 'CREATE'),"
            " has_schema_privilege(current_user, 'public', 'CREATE')"
        ).fetchone()
        assert privileges == (False, True)
        assert refusal(conn, "CREATE TABLE public.mine (x int)") == "42501"


def test_database_create_is_taken_back_only_when_no_hub_needs_it_and_we_gave_it(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    first, second = new_schema_name("lp"), new_schema_name("lp")
    for schema in (first, second):
        migrate.upgrade(database_url, schema, runtime_role=role.name)

    def can_create_schemas() -> bool:
        row = sql.execute(
            "SELECT has_database_privilege(%s, current_database(), 'CREATE')", [role.name]
        ).fetchone()
        return bool(row and row[0])

    def revoke(schema: str) -> None:
        runtime_role.revoke(database_url, schema, role.name)

    revoke(first)
    assert can_create_schemas()  # the second hub's runtime still connects
    revoke(second)
    assert not can_create_schemas()

    # A privilege the role had before we granted anything stays.
    sql.execute(f"GRANT CREATE ON DATABASE {sql.info.dbname} TO {role.name}")
    migrate.upgrade(database_url, first, runtime_role=role.name)
    revoke(first)
    assert can_create_schemas()


def test_an_owner_without_superuser_migrates_and_a_superuser_adds_the_guard_once(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    """The procedures run with their owner's rights, so production migrates as
    a dedicated owner role. Only the event trigger needs a superuser: once."""
    with login_role(database_url, prefix="owner") as owner:
        sql.execute(f"GRANT CREATE ON DATABASE {sql.info.dbname} TO {owner.name}")
        schema = new_schema_name("lp")
        migrate.upgrade(owner.url, schema)
        # The superuser's step: the guard alone; then the owner's grant.
        runtime_role.grant(database_url, schema, role.name)
        runtime_role.grant(owner.url, schema, role.name)
        # The owner's later runs re-grant every runtime role without a superuser.
        migrate.upgrade(owner.url, schema)

        guard_owner = sql.execute(
            "SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE oid = %s::regprocedure",
            ["taskhub_guard.refuse_runtime_ddl()"],
        ).fetchone()
        assert guard_owner == (sql.info.user,)  # never the owner's to rewrite
        client = duroxide.Client(duroxide.PostgresProvider.connect_with_schema(role.url, schema))
        assert client.list_all_instances() == []
        with psycopg.connect(role.url, autocommit=True) as conn:
            assert refusal(conn, f'CREATE TABLE "{schema}".mine (x int)') == "42501"

        runtime_role.revoke(database_url, schema, role.name)
        runtime_role.revoke(owner.url, schema, role.name)
        migrate.downgrade(owner.url, schema)
        assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)


def test_only_runs_that_change_the_schema_re_grant_runtime_roles(
    database_url: str, guarded_schema: str, role: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    """`alembic current` is a look: it grants nothing (a read-only operator may run it)."""
    sql.execute(f'REVOKE USAGE ON SCHEMA "{guarded_schema}" FROM {role.name}')

    def has_usage() -> bool:
        row = sql.execute(
            "SELECT has_schema_privilege(%s, %s, 'USAGE')", [role.name, guarded_schema]
        ).fetchone()
        return bool(row and row[0])

    looked = alembic("-x", f"schema={guarded_schema}", "current", url=database_url)
    assert looked.returncode == 0, looked.stderr
    assert not has_usage()
    migrate.upgrade(database_url, guarded_schema)  # already at head: nothing applied
    assert not has_usage()
    migrate.upgrade(database_url, guarded_schema, runtime_role=role.name)
    assert has_usage()


@pytest.mark.parametrize("refusal", ["superuser", "shares rights", "owns an object"])
def test_a_run_that_will_refuse_its_grant_refuses_before_the_first_revision_commits(
    database_url: str, role: LoginRole, sql: psycopg.Connection[Any], refusal: str
) -> None:
    """Revisions from 0006 on commit one by one: a grant refused only at the
    end of the run would leave every one of them applied (issue 37)."""
    schema = new_schema_name("lp")
    migrate.upgrade(database_url, schema, "0010")
    admin = sql.execute("SELECT current_user").fetchone()
    assert admin is not None
    candidate = admin[0] if refusal == "superuser" else role.name
    if refusal == "shares rights":
        sql.execute(f"GRANT {admin[0]} TO {role.name}")  # it would use the migrator's rights
    elif refusal == "owns an object":
        sql.execute(f'CREATE TABLE "{schema}".owned_by_the_role ()')
        sql.execute(f'ALTER TABLE "{schema}".owned_by_the_role OWNER TO {role.name}')
    try:
        # A role that owns an object in the schema controls the hub: the
        # superuser's run is refused before anything, as a privileged one.
        refused = r"is a superuser|shares its rights|owns relation|can do more than a role"
        with pytest.raises(Exception, match=refused):
            migrate.upgrade(database_url, schema, runtime_role=candidate, runtime_ddl="none")
        with psycopg.connect(database_url) as conn:
            assert installed_revision(conn, schema) == "0010"
    finally:
        if refusal == "shares rights":
            sql.execute(f"REVOKE {admin[0]} FROM {role.name}")
        sql.execute(f'DROP TABLE IF EXISTS "{schema}".owned_by_the_role')
        migrate.downgrade(database_url, schema, "base")


def test_a_runtime_role_without_ddl_loses_its_create_on_public_and_check_warns_of_publics(
    role: LoginRole, fresh_database: str
) -> None:
    """PostgreSQL 14 lets PUBLIC create in schema public. The grant takes back
    a CREATE there that the runtime role holds by a grant of its own; what
    PUBLIC gives it, `check` names as a warning (the database's right, not the
    hub's drift). Here PUBLIC's right is given as 14 gives it, on any major."""
    with psycopg.connect(fresh_database, autocommit=True) as admin:
        admin.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
        admin.execute(f"GRANT CREATE ON SCHEMA public TO {role.name}")
    migrate.upgrade(fresh_database, "orders", runtime_role=role.name, runtime_ddl="none")
    with psycopg.connect(fresh_database, autocommit=True) as admin:
        own = admin.execute(
            "SELECT count(*) FROM pg_namespace, aclexplode(nspacl) AS a"
            " WHERE nspname = 'public' AND a.grantee = to_regrole(%s)",
            [role.name],
        ).fetchone()
        assert own == (0,)
    report = drift.check(fresh_database, "orders")
    assert report.ok, report.problems
    assert [w for w in report.warnings if role.name in w] == [
        f"runtime role {role.name} has runtime_ddl none but may CREATE in schema public,"
        " through PUBLIC (its default before PostgreSQL 15): REVOKE CREATE ON SCHEMA public"
        " FROM PUBLIC"
    ]
    with psycopg.connect(fresh_database, autocommit=True) as admin:
        admin.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    assert not [w for w in drift.check(fresh_database, "orders").warnings if role.name in w]
