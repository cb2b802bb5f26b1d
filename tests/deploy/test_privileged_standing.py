"""Who counts as privileged next to a hub, and every session that asks
before it runs the hub's code (issue 54, the third attack on the fence):
a migration asks again under its lock, the metrics and the wakeup listener
ask before their first statement that names anything, a login that may
grant itself the owner's role or owns the database counts, and the look
reads the catalogue by oid, which needs no USAGE on the hub's schema.

Each test fails on 75d3c09, where the attacker of the third review found
these holes (docs/security.md, "Issue 54").
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import pytest

from devkit.roles import url_as
from provider import TaskHub
from provider.citus_placement import Node
from provider.cli import main
from provider.client.wakeups import Wakeups
from provider.config import TaskHubConfig
from provider.deploy import migrate, privileged_session
from provider.errors import ConfigurationError
from provider.metrics.collector import HubCollector
from provider.operations import citus
from provider.standing import refusal
from tests.support.owned_hubs import (
    HUB,
    OwnedDatabase,
    on_database,
    owned_database,
    runs_as_another_role,
    superuser_roles,
)

pytestmark = pytest.mark.slow

WAIT_S = 30.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Until `condition` holds (checked every 20 ms), or fail after WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting for {what} after {WAIT_S} s")
        time.sleep(0.02)


def shadow_pg_backend_pid(owned: OwnedDatabase) -> None:
    """The owner of the database puts its schema first on every session's
    path and shadows pg_backend_pid, which sessions send before they look."""
    owned.as_owner(
        f'ALTER DATABASE "{owned.name}" SET search_path = orders, pg_catalog',
        "CREATE FUNCTION orders.pg_backend_pid() RETURNS integer LANGUAGE sql"
        " AS $$ SELECT orders.record_run_int() + pg_catalog.pg_backend_pid() $$",
    )


# -- a migration asks again under its lock ------------------------------------


@contextmanager
def database_a_lesser_role_may_create_in(server_url: str) -> Iterator[tuple[str, str]]:
    """A database the superuser owns, where a lesser role may create schemas:
    (the superuser's URL there, the lesser role's)."""
    token = secrets.token_hex(5)
    database, role, password = f"shared_{token}", f"tenant_{token}", secrets.token_hex(12)
    try:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
            superuser.execute(f'CREATE DATABASE "{database}"')
            superuser.execute(f'GRANT CREATE ON DATABASE "{database}" TO {role}')
        here = on_database(server_url, database)
        yield here, url_as(here, role, password)
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            superuser.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_schema_made_while_a_migration_waits_for_its_lock_is_refused(
    server_url: str,
) -> None:
    """The superuser creates a new hub; its first look finds no schema, then
    it queues behind another deploy of that schema. Meanwhile a lesser role
    creates the schema: the run, once it holds the lock, must not build the
    hub in a schema that role controls (on 75d3c09 it did)."""
    schema = "late"
    with database_a_lesser_role_may_create_in(server_url) as (superuser_url, tenant_url):
        lock = f"SELECT pg_advisory_lock(hashtextextended('taskhub:{schema}:migrations', 0))"
        outcome: list[BaseException | None] = []

        def migrate_as_superuser() -> None:
            try:
                migrate.upgrade(superuser_url, schema)
                outcome.append(None)
            except BaseException as error:  # the test reads it below
                outcome.append(error)

        with psycopg.connect(superuser_url, autocommit=True) as other_deploy:
            other_deploy.execute(lock)
            run = threading.Thread(target=migrate_as_superuser)
            run.start()

            def waits_for_the_lock() -> bool:
                row = other_deploy.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
                return bool(row and row[0])

            wait_for(waits_for_the_lock, "the run to queue behind the migration lock")
            with psycopg.connect(tenant_url, autocommit=True) as tenant:
                tenant.execute(f"CREATE SCHEMA {schema}")
            other_deploy.execute(
                f"SELECT pg_advisory_unlock(hashtextextended('taskhub:{schema}:migrations', 0))"
            )
            run.join(timeout=WAIT_S)
        assert outcome and isinstance(outcome[0], privileged_session.PrivilegedSessionRefused), (
            outcome
        )
        with psycopg.connect(superuser_url) as conn:
            built = conn.execute(
                "SELECT count(*) FROM pg_class WHERE relnamespace = %s::regnamespace", [schema]
            ).fetchone()
        assert built == (0,)  # nothing of the hub in the tenant's schema


# -- the metrics and the wakeup listener ask first ------------------------------


def test_the_metrics_of_a_superuser_run_nothing_the_database_owner_planted(
    server_url: str,
) -> None:
    with owned_database(server_url) as owned:
        shadow_pg_backend_pid(owned)
        superusers = superuser_roles(server_url)
        states = HubCollector(owned.superuser_url, [HUB], timeout_s=5.0).probe()
        assert [state.up for state in states] == [False]
        assert runs_as_another_role(owned) == (0, [])
        assert superuser_roles(server_url) == superusers


def test_a_wakeup_listener_of_a_superuser_runs_nothing_the_owner_controls(
    server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """listen_url reaches the hub as a superuser: the listener refuses itself
    (the workers poll) before it calls the hub's taskhub_listen, which the
    owner rewrote, or sends anything the database's path could resolve."""
    with owned_database(server_url) as owned:
        shadow_pg_backend_pid(owned)
        owned.as_owner(
            "CREATE OR REPLACE FUNCTION orders.taskhub_listen(p_queue text) RETURNS text"
            " LANGUAGE plpgsql AS $$ BEGIN PERFORM orders.record_run();"
            " RETURN 'planted'; END $$"
        )
        config = TaskHubConfig(url=owned.owner_url, schema=HUB)
        caplog.set_level(logging.ERROR, logger="provider.client.wakeups")
        listener = Wakeups.acquire(config, "worker", owned.superuser_url)
        try:
            wait_for(
                lambda: "push wakeups refused" in caplog.text or runs_as_another_role(owned)[0] > 0,
                "the listener to refuse itself",
            )
        finally:
            listener.release()
        assert runs_as_another_role(owned) == (0, [])
        assert "can do more than" in caplog.text


# -- who counts as privileged --------------------------------------------------


@contextmanager
def hub_then_database_given_away(server_url: str) -> Iterator[tuple[str, str]]:
    """A hub the superuser migrated, in a database it then gave to a lesser
    role (ALTER DATABASE ... OWNER TO): (the superuser's URL, the role)."""
    token = secrets.token_hex(5)
    database, role = f"given_{token}", f"dbowner_{token}"
    try:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f"CREATE ROLE {role} LOGIN")
            superuser.execute(f'CREATE DATABASE "{database}"')
        here = on_database(server_url, database)
        migrate.upgrade(here, HUB)
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f'ALTER DATABASE "{database}" OWNER TO {role}')
        yield here, role
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            superuser.execute(f"DROP ROLE IF EXISTS {role}")


def test_the_database_owner_controls_every_hub_in_its_database(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The database's owner configures every session there and owns what
    pg_database_owner owns (which no dependency records): a superuser is
    privileged next to every hub of a database a lesser role owns, its own
    hub included, and its steps, client and migrations there are refused."""
    with hub_then_database_given_away(server_url) as (superuser_url, database_owner):
        with psycopg.connect(superuser_url) as conn:
            found = privileged_session.standing(conn, HUB)
        assert found.privileged and found.database_owner == database_owner
        assert database_owner in (refusal(found, "a repair") or "")
        with pytest.raises(ConfigurationError, match="can do more than"):
            TaskHub.connect(superuser_url, HUB)
        with pytest.raises(privileged_session.PrivilegedSessionRefused):
            migrate.upgrade(superuser_url, HUB)
        with pytest.raises(privileged_session.PrivilegedSessionRefused):
            migrate.upgrade(superuser_url, "another_hub")
        capsys.readouterr()
        assert main(["status", "--schema", HUB, "--url", superuser_url]) != 0
        assert "can do more than" in capsys.readouterr().err


@contextmanager
def role_maker(server_url: str, database: str) -> Iterator[str]:
    """A login with CREATEROLE and no role granted (its URL on `database`)."""
    login, password = f"maker_{secrets.token_hex(5)}", secrets.token_hex(12)
    with psycopg.connect(server_url, autocommit=True) as superuser:
        superuser.execute(f"CREATE ROLE {login} LOGIN CREATEROLE PASSWORD '{password}'")
    try:
        yield url_as(on_database(server_url, database), login, password)
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [login],
            )
            superuser.execute(f"DROP ROLE {login}")


def test_a_createrole_login_counts_where_it_may_grant_itself_the_owner(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before PostgreSQL 16 a CREATEROLE login may grant itself any role that
    is no superuser, the hub's owner included: it is privileged next to
    every hub. From 16 it may grant only the roles it was given with ADMIN,
    none here. Either way its look needs no USAGE on the hub's schema (a
    managed admin from 16 has none: the look once failed there)."""
    with owned_database(server_url) as owned, role_maker(server_url, owned.name) as maker_url:
        with psycopg.connect(maker_url) as conn:
            found = privileged_session.standing(conn, HUB)
            before_16 = conn.info.server_version < 160000
        assert (found.hub_exists, found.may_gain, found.owner) == (True, True, owned.owner)
        assert found.privileged is before_16
        if before_16:
            capsys.readouterr()
            assert main(["repair", "--schema", HUB, "--url", maker_url]) != 0
            assert "can do more than" in capsys.readouterr().err


def test_a_citus_move_is_refused_to_a_privileged_session(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The move copies the hub's tables, whose triggers, defaults and checks
    are the owner's: refused before it asks or looks for Citus."""
    with owned_database(server_url) as owned:
        capsys.readouterr()
        move = ["citus", "move", "--to", "worker-2:5432", "--yes", "--schema", HUB]
        code = main([*move, "--url", owned.superuser_url])
        assert code != 0
        assert "can do more than" in capsys.readouterr().err


def test_a_superuser_refuses_a_public_schema_every_role_may_create_in(
    fresh_database: str,
) -> None:
    """PostgreSQL 14 and older let every role create in schema public, so any
    of them could plant an object a superuser's migration there would run:
    refused, nothing created, and the refusal names the REVOKE that
    PostgreSQL 15 made the default (not "connect as" the superuser itself).
    Granted here, so that every major shows it; taken back, it deploys."""
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")
        with pytest.raises(privileged_session.PrivilegedSessionRefused) as refused:
            migrate.upgrade(fresh_database, "public")
        assert "REVOKE CREATE ON SCHEMA public FROM PUBLIC" in str(refused.value)
        assert "connect as" not in str(refused.value)
        assert conn.execute("SELECT to_regclass('public.instances')").fetchone() == (None,)
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        migrate.upgrade(fresh_database, "public")
        assert conn.execute("SELECT to_regclass('public.instances')").fetchone() != (None,)


def test_the_move_itself_looks_on_the_connection_it_moves_on(server_url: str) -> None:
    """Not only the CLI: a superuser's own code calling the operation with
    its connection is refused there, before it asks anything of Citus."""
    with owned_database(server_url) as owned:
        with (
            psycopg.connect(owned.superuser_url, autocommit=True) as conn,
            pytest.raises(citus.CitusRefused, match="can do more than"),
        ):
            citus.move(conn, HUB, Node("worker-2", 5432))
        assert runs_as_another_role(owned) == (0, [])
