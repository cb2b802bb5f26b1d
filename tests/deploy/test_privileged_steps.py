"""A session that can do more than a hub's owner executes nothing the owner
controls (issue 54), whatever the owner planted: safe by construction, not by
inspection (provider/deploy/privileged_session.py, docs/security.md).

Each test makes a database its owner owns (the common `CREATE DATABASE app
OWNER app_owner`), in which the owner migrates its hub, plants one route, and
plants a recorder: `orders.record_run()`, which counts every run as another
role than the owner in a sequence (a count no rollback takes back), records
current_user, and tries to make the owner a superuser (or, as a managed
admin, to create a role). Then a privileged login takes every documented
step and every step it must refuse: a superuser, and a managed service's
admin (CREATEROLE, a member of the owner's role, allowed to create event
triggers where the tests can build the module that lets it). The recorder
must never have run, and the owner must still be no superuser.

The routes are the issue's three reproductions (a database search_path with
a shadowing pg_backend_pid, a CHECK constraint that runs SQL through
query_to_xml, an overload whose default runs), and variants the suite
chose: a database `role` setting, a domain-typed argument, a partitioned
table whose partition has a trigger, an owner-made cast and operators, a
view and a row-security policy over the hub's tables, a helper rewritten and
re-blessed, a trigger on a table a grant writes, a set-aside definition a
downgrade would run, and a role setting for the privileged login in this
database. Run against 3c77916 (the privileged fence), the first three and
most variants made the owner a superuser (docs/security.md, the table).
"""

from __future__ import annotations

import secrets
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest

from devkit.roles import url_as
from provider import TaskHub
from provider.cli import main
from provider.deploy import migrate, privileged_session
from provider.errors import ConfigurationError
from provider.standing import untrusted
from provider.testing.embedded_pg import EmbeddedPostgres
from tests.support.owned_hubs import (
    HUB,
    RECORDER,
    OwnedDatabase,
    Privileged,
    on_database,
    owned_database,
    privileged_login,
    runs_as_another_role,
    superuser_roles,
)

pytestmark = pytest.mark.slow


# -- the routes the owner plants --------------------------------------------

Plant = Callable[[OwnedDatabase, Privileged], None]


def packaged_body(owned: OwnedDatabase, signature: str) -> str:
    with psycopg.connect(owned.owner_url) as conn:
        row = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE oid = %s::regprocedure", [f"{HUB}.{signature}"]
        ).fetchone()
    assert row is not None
    return str(row[0])


def a_database_search_path(owned: OwnedDatabase, who: Privileged) -> None:
    """Reproduction 1: the owner owns the database, puts its schema first on
    every session's path, and shadows the function the pooling check calls."""
    owned.as_owner(
        f'ALTER DATABASE "{owned.name}" SET search_path = orders, pg_catalog',
        "CREATE FUNCTION orders.pg_backend_pid() RETURNS integer LANGUAGE sql"
        " AS $$ SELECT orders.record_run_int() + pg_catalog.pg_backend_pid() $$",
        "CREATE FUNCTION orders.set_config(text, text, boolean) RETURNS text LANGUAGE sql"
        " AS $$ SELECT CASE WHEN orders.record_run() THEN $2 END $$",
    )


def a_database_role_setting(owned: OwnedDatabase, who: Privileged) -> None:
    """Reproduction 1's variant: every session of the database starts as the owner."""
    owned.as_owner(f'ALTER DATABASE "{owned.name}" SET role = {owned.owner}')


def a_check_constraint_running_sql(owned: OwnedDatabase, who: Privileged) -> None:
    """Reproduction 2: no dependency records the function the check runs."""
    for table in ("taskhub_operator_roles", "taskhub_runtime_roles"):
        owned.as_owner(
            f"ALTER TABLE orders.{table} ADD CONSTRAINT planted CHECK"
            " (pg_catalog.query_to_xml('SELECT orders.record_run()', true, true, '')"
            " IS NOT NULL) NOT VALID"
        )


def an_overload_with_a_default(owned: OwnedDatabase, who: Privileged) -> None:
    """Reproduction 3: the packaged body under another signature."""
    for function in ("taskhub_grant_operator_role", "taskhub_grant_runtime_role"):
        arguments = "p_role text" + (
            ", p_runtime_ddl text" if function == "taskhub_grant_runtime_role" else ""
        )
        signature = "(text, text)" if "runtime" in function else "(text)"
        body = packaged_body(owned, function + signature).replace("$$", "")
        owned.as_owner(
            f"CREATE FUNCTION orders.{function}({arguments},"
            " p_unused integer DEFAULT orders.record_run_int()) RETURNS void LANGUAGE plpgsql"
            f" SET search_path = pg_catalog, pg_temp AS $planted${body}$planted$"
        )


def a_domain_typed_argument(owned: OwnedDatabase, who: Privileged) -> None:
    body = packaged_body(owned, "taskhub_grant_runtime_role(text, text)")
    owned.as_owner(
        "CREATE DOMAIN orders.role_name AS text CHECK (orders.record_run())",
        "DROP FUNCTION orders.taskhub_grant_runtime_role(text, text)",
        "CREATE FUNCTION orders.taskhub_grant_runtime_role(p_role orders.role_name,"
        " p_runtime_ddl text DEFAULT 'guarded') RETURNS void LANGUAGE plpgsql"
        f" SET search_path = pg_catalog, pg_temp AS $planted${body}$planted$",
    )


def a_partition_with_a_trigger(owned: OwnedDatabase, who: Privileged) -> None:
    """The grant's table becomes a partitioned one; the trigger is on its partition."""
    owned.as_owner(
        "ALTER TABLE orders.taskhub_runtime_roles RENAME TO runtime_roles_before",
        "CREATE TABLE orders.taskhub_runtime_roles (LIKE orders.runtime_roles_before"
        " INCLUDING ALL) PARTITION BY LIST (role_name)",
        "CREATE TABLE orders.runtime_roles_all PARTITION OF orders.taskhub_runtime_roles DEFAULT",
        "CREATE FUNCTION orders.record_row() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN PERFORM orders.record_run(); RETURN NEW; END $$",
        "CREATE TRIGGER planted BEFORE INSERT OR DELETE ON orders.runtime_roles_all"
        " FOR EACH ROW EXECUTE FUNCTION orders.record_row()",
        "INSERT INTO orders.taskhub_runtime_roles SELECT * FROM orders.runtime_roles_before",
    )


def a_cast_and_operators(owned: OwnedDatabase, who: Privileged) -> None:
    """Operators for the comparisons a catalogue query makes, found first on
    the database's path, and an implicit cast into an argument's type."""
    owned.as_owner(
        f'ALTER DATABASE "{owned.name}" SET search_path = orders, pg_catalog',
        "CREATE FUNCTION orders.same_oid(oid, oid) RETURNS boolean LANGUAGE sql"
        " AS $$ SELECT orders.record_run() AND $1 OPERATOR(pg_catalog.=) $2 $$",
        "CREATE OPERATOR orders.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = orders.same_oid)",
        "CREATE FUNCTION orders.same_name(name, name) RETURNS boolean LANGUAGE sql"
        " AS $$ SELECT orders.record_run() AND $1 OPERATOR(pg_catalog.=) $2 $$",
        "CREATE OPERATOR orders.= (LEFTARG = name, RIGHTARG = name, FUNCTION = orders.same_name)",
        "CREATE TYPE orders.role_text AS (name text)",
        "CREATE FUNCTION orders.to_role_text(text) RETURNS orders.role_text LANGUAGE sql"
        " AS $$ SELECT CASE WHEN orders.record_run() THEN ROW($1)::orders.role_text END $$",
        "CREATE CAST (text AS orders.role_text) WITH FUNCTION orders.to_role_text(text)"
        " AS IMPLICIT",
        "CREATE FUNCTION orders.taskhub_grant_operator_role(p_role orders.role_text)"
        " RETURNS void LANGUAGE sql AS $$ SELECT $$",
    )


def a_view_and_a_policy(owned: OwnedDatabase, who: Privileged) -> None:
    """A grant's table becomes a view that runs the owner's code on every row;
    the other keeps its name and gets a policy (a superuser bypasses row
    security, a managed admin need not)."""
    owned.as_owner(
        "ALTER TABLE orders.taskhub_runtime_roles RENAME TO runtime_roles_before",
        "CREATE VIEW orders.taskhub_runtime_roles AS SELECT * FROM orders.runtime_roles_before"
        " WHERE orders.record_run()",
        "ALTER TABLE orders.taskhub_operator_roles ENABLE ROW LEVEL SECURITY",
        "CREATE POLICY planted ON orders.taskhub_operator_roles"
        " USING (orders.record_run()) WITH CHECK (orders.record_run())",
    )


def a_helper_rewritten_and_re_blessed(owned: OwnedDatabase, who: Privileged) -> None:
    """A helper every role step calls, rewritten, and recorded as if shipped."""
    owned.as_owner(
        "CREATE OR REPLACE FUNCTION orders.taskhub_shares_rights(p_role text, p_other text)"
        " RETURNS boolean LANGUAGE sql SET search_path = pg_catalog, pg_temp"
        " AS $$ SELECT NOT orders.record_run() $$",
        "CREATE OR REPLACE FUNCTION orders.taskhub_revoke_public_execute() RETURNS void"
        " LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"
        " AS $$ BEGIN PERFORM orders.record_run(); END $$",
        "SELECT orders.taskhub_record_definitions()",
    )


def a_trigger_on_a_table_a_grant_writes(owned: OwnedDatabase, who: Privileged) -> None:
    owned.as_owner(
        "CREATE FUNCTION orders.record_row() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN PERFORM orders.record_run(); RETURN coalesce(NEW, OLD); END $$",
        *(
            f"CREATE TRIGGER planted BEFORE INSERT OR UPDATE OR DELETE ON orders.{table}"
            " FOR EACH ROW EXECUTE FUNCTION orders.record_row()"
            for table in (
                "taskhub_runtime_roles",
                "taskhub_operator_roles",
                "taskhub_definitions",
                "taskhub_pg_alembic_version",
            )
        ),
    )


def a_set_aside_definition(owned: OwnedDatabase, who: Privileged) -> None:
    """A row a downgrade to base executes."""
    owned.as_owner(
        "INSERT INTO orders.taskhub_set_aside_functions (function_name, identity_args, definition)"
        " VALUES ('fetch_orchestration_item', '', 'SELECT orders.record_run()')"
    )


def schedule_functions_rewritten(owned: OwnedDatabase, who: Privileged) -> None:
    """The schedule verbs' and the scheduler's functions (found by the
    attacker of issue 54: those verbs asked nothing)."""
    for function, returns in (
        ("taskhub_read_schedules()", "SETOF record"),
        ("taskhub_list_schedules()", "SETOF record"),
    ):
        owned.as_owner(
            f"DROP FUNCTION IF EXISTS orders.{function} CASCADE",
            f"CREATE FUNCTION orders.{function} RETURNS {returns} LANGUAGE plpgsql"
            " AS $$ BEGIN PERFORM orders.record_run(); END $$",
        )


def a_role_setting_for_the_login_here(owned: OwnedDatabase, who: Privileged) -> None:
    """A setting of the privileged login in this database (planted here by the
    server's superuser, standing in for whoever may)."""
    owned.as_owner(
        "CREATE FUNCTION orders.pg_backend_pid() RETURNS integer LANGUAGE sql"
        " AS $$ SELECT orders.record_run_int() + pg_catalog.pg_backend_pid() $$",
    )
    owned.as_superuser(
        f'ALTER ROLE "{who.login}" IN DATABASE "{owned.name}" SET search_path = orders, pg_catalog',
        f'ALTER ROLE "{who.login}" IN DATABASE "{owned.name}" SET statement_timeout = 0',
    )


PLANTS: dict[str, Plant] = {
    "database search_path": a_database_search_path,
    "database role setting": a_database_role_setting,
    "check constraint": a_check_constraint_running_sql,
    "overload with a default": an_overload_with_a_default,
    "domain-typed argument": a_domain_typed_argument,
    "partition with a trigger": a_partition_with_a_trigger,
    "cast and operators": a_cast_and_operators,
    "view and policy": a_view_and_a_policy,
    "helper re-blessed": a_helper_rewritten_and_re_blessed,
    "trigger on a grant's table": a_trigger_on_a_table_a_grant_writes,
    "set-aside definition": a_set_aside_definition,
    "role setting for the login": a_role_setting_for_the_login_here,
    "schedule functions": schedule_functions_rewritten,
}

# Every step a privileged session may be asked to take on an owner's hub: the
# documented ones (the DDL guard's grant and revoke, check), and those it must
# refuse in one line (everything that runs the hub's code).
STEPS: list[tuple[str, ...]] = [
    ("grant-runtime-role", "{runtime}", "--schema", HUB),
    ("check", "--schema", HUB),
    ("grant-operator-role", "{operator}", "--schema", HUB),
    ("revoke-operator-role", "{operator}", "--schema", HUB),
    ("history-format", "jsonb", "--force", "--schema", HUB),
    ("repair", "--schema", HUB),
    ("status", "--schema", HUB),
    ("inspect", "queues", "--schema", HUB),
    ("upgrade", "--schema", HUB),
    ("downgrade", "--revision", "base", "--yes", "--schema", HUB),
    ("revoke-runtime-role", "{runtime}", "--schema", HUB),
    ("schedule", "list", "--schema", HUB),
    (
        "schedule",
        "add",
        "nightly",
        "--orchestration",
        "Order",
        "--cron",
        "0 3 * * *",
        "--schema",
        HUB,
    ),
    ("schedule", "pause", "nightly", "--schema", HUB),
    # Servers: refused at their start (else they would serve until stopped).
    ("scheduler", "--schema", HUB),
    ("metrics", "--schema", HUB, "--port", "{port}"),
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["superuser", "admin"])
def privileged_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS.keys())
def test_nothing_the_owner_planted_runs_in_a_privileged_step(
    server_url: str,
    embedded_cluster: EmbeddedPostgres | None,
    privileged_kind: str,
    plant: Plant,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with (
        owned_database(server_url) as owned,
        privileged_login(privileged_kind, owned, server_url, embedded_cluster) as who,
    ):
        superusers = superuser_roles(server_url)
        plant(owned, who)
        codes = {}
        for step in STEPS:
            argv = [
                part.format(runtime=owned.runtime, operator=owned.operator, port=free_port())
                for part in step
            ]
            capsys.readouterr()
            codes[step[0]] = main([*argv, "--url", who.url])
        output = capsys.readouterr()
        assert runs_as_another_role(owned) == (0, []), (codes, output.err[-2000:])
        assert superuser_roles(server_url) == superusers
        with psycopg.connect(server_url) as conn:
            planted_admin = conn.execute(
                "SELECT 1 FROM pg_roles WHERE rolname = %s", [f"{owned.owner}_planted_admin"]
            ).fetchone()
        assert planted_admin is None
        # What runs the hub's code was refused in one line each.
        for verb in (
            "grant-operator-role",
            "repair",
            "status",
            "upgrade",
            "downgrade",
            "schedule",
            "scheduler",
            "metrics",
        ):
            assert codes[verb] != 0, (verb, codes)


@contextmanager
def hub_in_a_superusers_schema(server_url: str, schema: str) -> Iterator[OwnedDatabase]:
    """A database the superuser owns, where the owner migrated its hub into a
    schema the superuser made (`public`, which pg_database_owner, the
    superuser here, owns from PostgreSQL 15; or one made and granted)."""
    token = secrets.token_hex(5)
    owner, runtime, database = f"owner_{token}", f"runtime_{token}", f"super_{token}"
    password = secrets.token_hex(12)
    try:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            for role in (owner, runtime):
                superuser.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
            superuser.execute(f'CREATE DATABASE "{database}"')
        superuser_url = on_database(server_url, database)
        with psycopg.connect(superuser_url, autocommit=True) as superuser:
            superuser.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            superuser.execute(f"GRANT ALL ON SCHEMA {schema} TO {owner}")
            superuser.execute(f'GRANT CREATE ON DATABASE "{database}" TO {owner}')
        owner_url = url_as(superuser_url, owner, password)
        migrate.upgrade(owner_url, schema)
        with psycopg.connect(owner_url, autocommit=True) as conn:
            conn.execute(RECORDER.replace("orders.", f"{schema}.").format(owner=owner))
        yield OwnedDatabase(database, owner, owner_url, superuser_url, runtime, "nobody")
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            superuser.execute(f"DROP ROLE IF EXISTS {owner}_planted_admin")
            for role in (runtime, owner):
                superuser.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.mark.parametrize("schema", ["public", "granted"])
def test_renamed_tables_in_a_schema_a_superuser_owns_do_not_hide_who_controls_the_hub(
    server_url: str, schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The owner renames the tables a look once took the hub's owner from, so
    that the schema's owner (a superuser) answered for it: who controls the
    hub is every role that owns anything in it (found by the attacker of
    issue 54: the superuser's grant then ran the owner's function)."""
    with hub_in_a_superusers_schema(server_url, schema) as owned:
        body = packaged_body_in(owned, schema, "taskhub_grant_runtime_role(text, text)")
        owned.as_owner(
            f"ALTER TABLE {schema}.taskhub_pg_alembic_version RENAME TO version_elsewhere",
            f"ALTER TABLE {schema}.instances RENAME TO instances_elsewhere",
            f"CREATE OR REPLACE FUNCTION {schema}.taskhub_grant_runtime_role(p_role text,"
            " p_runtime_ddl text DEFAULT 'guarded') RETURNS void LANGUAGE plpgsql"
            f" SET search_path = pg_catalog, pg_temp AS $planted$ BEGIN"
            f" PERFORM {schema}.record_run(); END $planted$",
        )
        assert body  # the packaged one was there to replace
        superusers = superuser_roles(server_url)
        for step in (
            ("grant-runtime-role", owned.runtime, "--schema", schema),
            ("status", "--schema", schema),
            ("check", "--schema", schema),
            ("upgrade", "--schema", schema),
        ):
            capsys.readouterr()
            main([*step, "--url", owned.superuser_url])
        with psycopg.connect(owned.superuser_url) as conn:
            ran = conn.execute(
                f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
                f" FROM {schema}.runs_as_another_role"
            ).fetchone()
        assert ran == (0,), capsys.readouterr().err
        assert superuser_roles(server_url) == superusers


def packaged_body_in(owned: OwnedDatabase, schema: str, signature: str) -> str:
    with psycopg.connect(owned.owner_url) as conn:
        row = conn.execute(
            "SELECT prosrc FROM pg_proc WHERE oid = %s::regprocedure", [f"{schema}.{signature}"]
        ).fetchone()
    return "" if row is None else str(row[0])


def test_a_schema_that_is_not_there_when_a_session_looks_proves_nothing(
    database_url: str,
) -> None:
    """The owner renames its schema away while a privileged session looks, and
    back after (found by the attacker of issue 54: the look said "not
    privileged"). A session that could be privileged is refused then: by a
    deploy step, the runbook's verbs, and the hub's client."""
    missing = f"gone_{secrets.token_hex(4)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        found = privileged_session.standing(conn, missing)
    assert (found.hub_exists, found.may_gain, found.privileged) == (False, True, False)
    assert untrusted(found)
    with pytest.raises(privileged_session.PrivilegedSessionRefused, match="does not exist"):
        privileged_session.refuse_privileged(found, "repair")
    with pytest.raises(ConfigurationError, match="does not exist"):
        TaskHub.connect(database_url, missing)
