"""A managed service's admin (issue 37): no superuser anywhere, roles made by
an admin with CREATEROLE, as RDS, Azure, Cloud SQL, Supabase and Neon give
it, and as every managed console makes them. From PostgreSQL 16 on, such an
admin is an admin-option member of every role it creates (INHERIT and SET
off) and cannot drop that membership: that is not sharing rights, and the
grants and the DDL guard must not take it for sharing.

The admin owns its database, creates the runtime and operator roles with
SQL, and migrates. With `--runtime-ddl none` (the mode every managed service
allows) nothing needs a superuser. The guarded mode needs a role that can
create an event trigger: on a managed service that allows them, the admin
(simulated by a module in the server that lets it, as each service does:
tests/support/event_trigger_admin/); on plain PostgreSQL, where only a
superuser can, the superuser's `taskhub-pg grant-runtime-role`. Either way
the runtime role's DDL is refused and the admin's is not.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import duroxide
import psycopg
import pytest
from psycopg import sql

from devkit.roles import url_as
from provider.cli import main
from provider.deploy import migrate, runtime_role
from provider.deploy.privileged_session import PrivilegedSessionRefused
from provider.testing.embedded_pg import EmbeddedPostgres, find_bin_dir
from tests.runtime.test_duroxide_runtime import (
    approve_when_waiting,
    completed_output,
    register,
)
from tests.support.event_trigger_admin import BuildError, library_for

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class ManagedDatabase:
    """A database its admin owns, and the roles the admin made."""

    admin_url: str
    runtime: str
    runtime_url: str
    operator: str
    operator_url: str
    admin: str
    owner: str  # a role for the hub's owner, made by the admin too
    owner_url: str


def _on_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


@contextmanager
def managed_database(server_url: str) -> Iterator[ManagedDatabase]:
    """A database and roles as a managed service's console makes them. Only
    what this made is dropped afterwards (roles are server-wide): a role
    whose CREATE failed, or a database that was never created, is not ours."""
    token = secrets.token_hex(5)
    admin, database = f"admin_{token}", f"managed_{token}"
    password = secrets.token_hex(12)
    created_roles: list[str] = []
    created_database = False
    try:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(
                f"CREATE ROLE {admin} LOGIN CREATEDB CREATEROLE PASSWORD '{password}'"
            )
            created_roles.append(admin)
            superuser.execute(f'CREATE DATABASE "{database}" OWNER {admin}')
            created_database = True
        admin_url = url_as(_on_database(server_url, database), admin, password)
        made = {
            "runtime": f"runtime_{token}",
            "operator": f"operator_{token}",
            "owner": f"owner_{token}",
        }
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for role in made.values():  # as a managed console would: by the admin
                conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
                created_roles.append(role)
        yield ManagedDatabase(
            admin_url,
            made["runtime"],
            url_as(admin_url, made["runtime"], password),
            made["operator"],
            url_as(admin_url, made["operator"], password),
            admin,
            made["owner"],
            url_as(admin_url, made["owner"], password),
        )
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            if created_database:
                superuser.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            for role in reversed(created_roles):  # the admin, which made the others, last
                superuser.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def managed(server_url: str) -> Iterator[ManagedDatabase]:
    with managed_database(server_url) as made:
        yield made


@pytest.fixture
def admin_with_event_triggers(
    managed: ManagedDatabase, server_url: str, embedded_cluster: EmbeddedPostgres | None
) -> ManagedDatabase:
    """The admin of a service that lets it create event triggers (RDS's
    rds_superuser, Cloud SQL's cloudsqlsuperuser, Supabase, Neon): still no
    superuser, and still an admin-option member of the roles it made."""
    if embedded_cluster is None:
        pytest.skip("loads a module into the admin's sessions: needs a server this run started")
    try:
        library = library_for(find_bin_dir())
    except BuildError as error:
        pytest.skip(f"the event_trigger_admin module cannot be built here: {error}")
    with psycopg.connect(server_url, autocommit=True) as superuser:
        superuser.execute(
            sql.SQL("ALTER ROLE {} SET session_preload_libraries = {}").format(
                sql.Identifier(managed.admin), sql.Literal(str(library))
            )
        )
    with psycopg.connect(managed.admin_url) as admin:
        row = admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        assert row == (False,)
    return managed


def run_scenarios(url: str, schema: str) -> None:
    """The released runtime, as the runtime role: activities fanned out, an
    external event, sub-orchestrations."""
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))
    register(runtime)
    runtime.start()
    try:
        client = duroxide.Client(provider)
        client.start_orchestration("greet-1", "Greeter", "managed")
        client.start_orchestration("sum-1", "SumOfSquares", 5)
        client.start_orchestration("approve-1", "AwaitApproval", None)
        client.start_orchestration("parent-1", "Parent", 3)
        approve_when_waiting(client, "approve-1", "Approve", {"by": "ops"})
        assert completed_output(client, "greet-1") == "Hello, managed!"
        assert completed_output(client, "sum-1") == 30
        assert completed_output(client, "approve-1") == {"by": "ops"}
        assert completed_output(client, "parent-1") == [9, 16]
    finally:
        runtime.shutdown(timeout_ms=2_000)


def refused_ddl(url: str, statement: str) -> str | None:
    return None if (refusal := ddl_refusal(url, statement)) is None else refusal[0]


def ddl_refusal(url: str, statement: str) -> tuple[str, str] | None:
    """The SQLSTATE and message that refused `statement`, or None."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement)
    except psycopg.Error as error:
        return str(error.sqlstate), str(error)
    return None


def cli(url: str, *argv: str) -> int:
    return main([*argv, "--url", url])


def superuser_on(managed: ManagedDatabase, server_url: str) -> str:
    """The tests' superuser, on the admin's database."""
    return _on_database(server_url, urlsplit(managed.admin_url).path[1:])


def test_the_managed_route_of_the_docs_runs_as_written(
    managed: ManagedDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/platforms.md, "A managed service, step by step": the admin makes
    an owner and the roles, the owner migrates with --runtime-ddl none; no
    superuser anywhere. The released runtime runs as the runtime role."""
    with psycopg.connect(managed.admin_url, autocommit=True) as admin:
        admin.execute(
            f"DO $$ BEGIN EXECUTE format('GRANT CREATE ON DATABASE %I TO {managed.owner}',"
            " current_database()); END $$"
        )
    monkeypatch.setenv("DATABASE_URL", managed.owner_url)
    upgrade = ["upgrade", "--schema", "orders", "--runtime-role", managed.runtime]
    assert main([*upgrade, "--runtime-ddl", "none"]) == 0
    assert main(["grant-operator-role", managed.operator, "--schema", "orders"]) == 0
    run_scenarios(managed.runtime_url, "orders")
    assert refused_ddl(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()") == "42501"
    assert cli(managed.operator_url, "inspect", "queues", "--schema", "orders") == 0
    assert main(["check", "--schema", "orders"]) == 0


def test_the_admin_migrates_as_itself_and_its_runtime_role_runs_without_ddl(
    managed: ManagedDatabase,
) -> None:
    """The admin is an admin-option member of the roles it made (16+): not
    sharing rights. (Refused as sharing before issue 37, on 16 and later.)"""
    migrate.upgrade(managed.admin_url, "orders", runtime_role=managed.runtime, runtime_ddl="none")
    runtime_role.grant_operator(managed.admin_url, "orders", managed.operator)
    run_scenarios(managed.runtime_url, "orders")
    assert refused_ddl(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()") == "42501"
    assert cli(managed.operator_url, "inspect", "queues", "--schema", "orders") == 0
    assert cli(managed.admin_url, "check", "--schema", "orders") == 0


def test_behind_the_guard_the_runtime_roles_ddl_is_refused_and_the_admins_is_not(
    managed: ManagedDatabase, server_url: str
) -> None:
    migrate.upgrade(managed.admin_url, "orders", runtime_role=managed.runtime, runtime_ddl="none")
    # The one step that needs a role able to create an event trigger: the
    # guard's part alone; then the hub's owner (the admin) grants the rest.
    step = runtime_role.grant(superuser_on(managed, server_url), "orders", managed.runtime)
    assert step.guard_changed and not step.owner_step_done
    runtime_role.grant(managed.admin_url, "orders", managed.runtime, "guarded")
    run_scenarios(managed.runtime_url, "orders")
    assert refused_ddl(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()") == "42501"
    assert refused_ddl(managed.admin_url, "CREATE TABLE public.admin_ddl ()") is None
    # The admin's own next migration needs no superuser.
    migrate.upgrade(managed.admin_url, "orders")
    assert cli(managed.admin_url, "check", "--schema", "orders") == 0


def test_a_guarded_grant_by_an_admin_that_cannot_create_event_triggers_is_refused_first(
    managed: ManagedDatabase,
) -> None:
    """Refused before the first revision commits, naming the two ways out."""
    with pytest.raises(Exception, match="needs the DDL guard to name role") as refused:
        migrate.upgrade(managed.admin_url, "orders", runtime_role=managed.runtime)
    assert "runtime_ddl=none" in str(refused.value)
    with psycopg.connect(managed.admin_url) as conn:
        assert conn.execute("SELECT to_regnamespace('orders')").fetchone() == (None,)


def test_an_admin_that_may_create_event_triggers_deploys_behind_the_guard_as_itself(
    admin_with_event_triggers: ManagedDatabase,
) -> None:
    """guarded asks whether the migrating role can create an event trigger,
    not whether it is a superuser; the admin's admin-option membership in the
    runtime role (16+) is not sharing. (Before issue 37 the run refused it:
    "needs a superuser", and on 16+ "shares its rights".)"""
    managed = admin_with_event_triggers
    migrate.upgrade(
        managed.admin_url, "orders", runtime_role=managed.runtime, runtime_ddl="guarded"
    )
    runtime_role.grant_operator(managed.admin_url, "orders", managed.operator)
    with psycopg.connect(managed.admin_url) as admin:
        guards = admin.execute("SELECT count(*) FROM pg_event_trigger WHERE evtenabled <> 'D'")
        assert guards.fetchone() == (1,)
    run_scenarios(managed.runtime_url, "orders")

    # The event trigger is a superuser's (the service's module made it), its
    # function (in the admin's schema taskhub_guard) the admin's and SECURITY
    # INVOKER: PostgreSQL runs it as the role running the DDL, not as the
    # trigger's owner (whom it would let by).
    assert guard_owners(managed.admin_url) == ("superuser", managed.admin, False)
    with psycopg.connect(managed.admin_url) as admin:
        owner = admin.execute(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'taskhub_guard'"
        ).fetchone()
    assert owner == (managed.admin,)
    refusal = ddl_refusal(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()")
    assert refusal is not None and refusal[0] == "42501", refusal
    assert f"role {managed.runtime} is a task-hub runtime role and may not run DDL" in refusal[1]
    assert ddl_refusal(managed.admin_url, "CREATE TABLE public.admin_ddl ()") is None
    assert ddl_refusal(managed.admin_url, "CREATE TABLE orders.admin_ddl ()") is None
    # The admin's next migration, and its check, as itself.
    migrate.upgrade(managed.admin_url, "orders")
    assert cli(managed.admin_url, "check", "--schema", "orders") == 0
    assert cli(managed.operator_url, "inspect", "queues", "--schema", "orders") == 0
    # The guard is the database's, not the hub's: a downgrade leaves it, and
    # it still refuses the runtime role's DDL there and after the way back.
    migrate.downgrade(managed.admin_url, "orders", "0023")
    assert ddl_refusal(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()") is not None
    migrate.upgrade(managed.admin_url, "orders")
    assert cli(managed.admin_url, "check", "--schema", "orders") == 0
    # And the way back: the admin takes the grant back, guard and all.
    runtime_role.revoke(managed.admin_url, "orders", managed.runtime)
    with psycopg.connect(managed.admin_url) as admin:
        assert admin.execute("SELECT count(*) FROM pg_event_trigger").fetchone() == (0,)
    assert ddl_refusal(managed.runtime_url, "CREATE TEMP TABLE runtime_ddl ()") is None


def guard_owners(url: str) -> tuple[str, str, bool]:
    """Who owns the guard's event trigger and who its function ("superuser"
    for any superuser), and whether that function is SECURITY DEFINER."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            """
            SELECT CASE WHEN t.rolsuper THEN 'superuser' ELSE t.rolname END,
                   CASE WHEN f.rolsuper THEN 'superuser' ELSE f.rolname END, p.prosecdef
              FROM pg_event_trigger AS e
              JOIN pg_roles AS t ON t.oid = e.evtowner
              JOIN pg_proc AS p ON p.oid = e.evtfoid
              JOIN pg_roles AS f ON f.oid = p.proowner
            """
        ).fetchone()
    assert row is not None
    return str(row[0]), str(row[1]), bool(row[2])


# A body that leaves a mark no rollback takes back (a sequence's nextval, as
# COPY ... TO PROGRAM would): each run, and each run as a superuser.
WITNESSED = """
CREATE SEQUENCE public.ran;
CREATE SEQUENCE public.ran_as_superuser;
GRANT USAGE ON SEQUENCE public.ran, public.ran_as_superuser TO PUBLIC;
CREATE OR REPLACE FUNCTION {function}
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $body$
BEGIN
    PERFORM nextval('public.ran');
    IF (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user) THEN
        PERFORM nextval('public.ran_as_superuser');
    END IF;
END
$body$;
"""


def witnessed_runs(url: str) -> tuple[int, int]:
    """How often the witnessed body ran, and how often as a superuser."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM public.ran),"
            " (SELECT CASE WHEN is_called THEN last_value ELSE 0 END"
            "    FROM public.ran_as_superuser)"
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def test_a_superusers_step_never_runs_a_guard_function_the_admin_rewrote(
    admin_with_event_triggers: ManagedDatabase, server_url: str
) -> None:
    """The admin that installed the guard owns its function and may rewrite
    it, and an event trigger runs for every role's DDL, a superuser's
    included: a superuser's step turns it off for its transaction, refuses to
    write a guard the admin owns, in one line, and leaves the trigger on as
    it was. The rewritten function never runs as the superuser. (Before
    issue 36 the step's own ALTER FUNCTION ... OWNER TO statements ran it as
    the superuser, once each.)"""
    managed = admin_with_event_triggers
    migrate.upgrade(
        managed.admin_url, "orders", runtime_role=managed.runtime, runtime_ddl="guarded"
    )
    with psycopg.connect(managed.admin_url, autocommit=True) as admin:
        admin.execute(WITNESSED.format(function="taskhub_guard.refuse_runtime_ddl()"))
        admin.execute("CREATE TABLE public.admin_ddl ()")
        guard = admin.execute("SELECT evtname FROM pg_event_trigger").fetchone()
        assert guard is not None
        admin.execute(
            sql.SQL("ALTER EVENT TRIGGER {} ENABLE ALWAYS").format(sql.Identifier(guard[0]))
        )
    assert witnessed_runs(managed.admin_url)[0] > 0  # it does run, for the admin's DDL

    superuser = superuser_on(managed, server_url)
    with pytest.raises(PrivilegedSessionRefused, match="belongs to role") as refused:
        runtime_role.grant(superuser, "orders", managed.operator)
    assert f"run the step as {managed.admin}" in str(refused.value)
    assert cli(superuser, "check", "--schema", "orders") == 0  # the catalogue alone
    assert witnessed_runs(managed.admin_url)[1] == 0
    assert guard_owners(managed.admin_url) == ("superuser", managed.admin, False)
    with psycopg.connect(managed.admin_url) as admin:
        enabled = admin.execute("SELECT evtenabled FROM pg_event_trigger").fetchall()
        assert enabled == [("A",)]


def test_a_superusers_step_turns_off_any_event_trigger_a_lesser_role_may_rewrite(
    admin_with_event_triggers: ManagedDatabase, server_url: str
) -> None:
    """An event trigger of the admin's own, on a function it owns, would run
    that function in every DDL of a superuser's step (a GRANT too): the step
    turns it off for its transaction, and it is on again after the commit."""
    managed = admin_with_event_triggers
    migrate.upgrade(managed.admin_url, "orders", runtime_role=managed.runtime, runtime_ddl="none")
    with psycopg.connect(managed.admin_url, autocommit=True) as admin:
        admin.execute(WITNESSED.format(function="public.audit_ddl()"))
        admin.execute(
            "CREATE EVENT TRIGGER audit_ddl ON ddl_command_end EXECUTE FUNCTION public.audit_ddl()"
        )
        admin.execute("CREATE TABLE public.admin_ddl ()")
    assert witnessed_runs(managed.admin_url) == (1, 0)

    superuser = superuser_on(managed, server_url)
    runtime_role.grant(superuser, "orders", managed.runtime)
    runtime_role.grant(managed.admin_url, "orders", managed.runtime, "guarded")
    assert ddl_refusal(managed.runtime_url, "CREATE TABLE orders.runtime_ddl ()") is not None
    runtime_role.revoke(superuser, "orders", managed.runtime)
    # It ran for the admin's own grants (as the admin), never for the superuser's.
    assert witnessed_runs(managed.admin_url)[1] == 0
    with psycopg.connect(managed.admin_url) as admin:
        enabled = admin.execute(
            "SELECT evtenabled FROM pg_event_trigger WHERE evtname = 'audit_ddl'"
        ).fetchall()
    assert enabled == [("O",)]
