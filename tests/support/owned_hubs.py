"""A database its owner owns, with the owner's hub, a recorder of every run
of the owner's code as another role, and the privileged logins around it
(a superuser, a managed service's admin): the ground of the tests that a
privileged session runs nothing the owner controls (tests/deploy/)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from devkit.roles import url_as
from provider.deploy import migrate
from provider.testing.embedded_pg import EmbeddedPostgres, find_bin_dir
from tests.support.event_trigger_admin import BuildError, library_for

HUB = "orders"


@dataclass(frozen=True)
class OwnedDatabase:
    """A database and its hub, both the owner's, and the roles around them."""

    name: str
    owner: str
    owner_url: str
    superuser_url: str  # the server's superuser, on this database
    runtime: str
    operator: str

    def as_owner(self, *statements: str) -> None:
        with psycopg.connect(self.owner_url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def as_superuser(self, *statements: str) -> None:
        with psycopg.connect(self.superuser_url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)


def on_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


RECORDER = """
CREATE TABLE orders.runs_recorded (who name NOT NULL, at timestamptz NOT NULL DEFAULT now());
GRANT INSERT ON orders.runs_recorded TO PUBLIC;
CREATE SEQUENCE orders.runs_as_another_role;
GRANT USAGE ON SEQUENCE orders.runs_as_another_role TO PUBLIC;
CREATE FUNCTION orders.record_run() RETURNS boolean
LANGUAGE plpgsql AS $body$
BEGIN
    IF current_user <> '{owner}' THEN
        PERFORM pg_catalog.nextval('orders.runs_as_another_role');
        INSERT INTO orders.runs_recorded (who) VALUES (current_user);
        BEGIN
            IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                EXECUTE 'ALTER ROLE {owner} SUPERUSER';
            ELSE
                EXECUTE 'CREATE ROLE {owner}_planted_admin CREATEROLE';
            END IF;
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END IF;
    RETURN true;
END
$body$;
CREATE FUNCTION orders.record_run_int() RETURNS integer
LANGUAGE sql AS $body$ SELECT CASE WHEN orders.record_run() THEN 0 END $body$;
"""


@contextmanager
def owned_database(server_url: str) -> Iterator[OwnedDatabase]:
    token = secrets.token_hex(5)
    owner, runtime, operator = f"owner_{token}", f"runtime_{token}", f"operator_{token}"
    database, password = f"owned_{token}", secrets.token_hex(12)
    made: list[str] = []
    created = False
    try:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            for role in (owner, runtime, operator):
                superuser.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
                made.append(role)
            superuser.execute(f'CREATE DATABASE "{database}" OWNER {owner}')
            created = True
        owner_url = url_as(on_database(server_url, database), owner, password)
        migrate.upgrade(owner_url, HUB, runtime_role=runtime, runtime_ddl="none")
        with psycopg.connect(owner_url, autocommit=True) as conn:
            conn.execute(RECORDER.format(owner=owner))
        yield OwnedDatabase(
            database, owner, owner_url, on_database(server_url, database), runtime, operator
        )
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            if created:
                superuser.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            superuser.execute(f"DROP ROLE IF EXISTS {owner}_planted_admin")
            for role in reversed(made):
                superuser.execute(f"DROP ROLE IF EXISTS {role}")


@dataclass(frozen=True)
class Privileged:
    kind: str  # superuser, admin
    url: str
    login: str
    may_create_event_triggers: bool


@contextmanager
def privileged_login(
    kind: str, owned: OwnedDatabase, server_url: str, cluster: EmbeddedPostgres | None
) -> Iterator[Privileged]:
    if kind == "superuser":
        login = urlsplit(owned.superuser_url).username or "postgres"
        yield Privileged(kind, owned.superuser_url, login, may_create_event_triggers=True)
        return
    # A managed service's admin: CREATEROLE, a member of the owner's role (as
    # a console makes it, and as PostgreSQL 16+ makes every creating admin).
    admin, password = f"admin_{secrets.token_hex(5)}", secrets.token_hex(12)
    with psycopg.connect(server_url, autocommit=True) as superuser:
        superuser.execute(f"CREATE ROLE {admin} LOGIN CREATEROLE PASSWORD '{password}'")
        superuser.execute(f"GRANT {owned.owner} TO {admin}")
        superuser.execute(f'GRANT CREATE ON DATABASE "{owned.name}" TO {admin}')
        may = False
        if cluster is not None:
            try:
                library = library_for(find_bin_dir())
            except BuildError:
                library = None
            if library is not None:
                superuser.execute(
                    sql.SQL("ALTER ROLE {} SET session_preload_libraries = {}").format(
                        sql.Identifier(admin), sql.Literal(str(library))
                    )
                )
                may = True
    try:
        yield Privileged(kind, url_as(owned.superuser_url, admin, password), admin, may)
    finally:
        with psycopg.connect(server_url, autocommit=True) as superuser:
            superuser.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [admin],
            )
            superuser.execute(f"DROP OWNED BY {admin} CASCADE")
            superuser.execute(f"DROP ROLE {admin}")


def runs_as_another_role(owned: OwnedDatabase) -> tuple[int, list[str]]:
    """How often the recorder ran as a role other than the owner (no rollback
    takes a sequence's count back), and who, where its row was committed."""
    with psycopg.connect(owned.superuser_url) as conn:
        count = conn.execute(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM orders.runs_as_another_role"
        ).fetchone()
        who = conn.execute("SELECT DISTINCT who::text FROM orders.runs_recorded").fetchall()
    return (int(count[0]) if count else 0), sorted(str(name) for (name,) in who)


def superuser_roles(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {
            str(name) for (name,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolsuper")
        }


def take_back_create_on_public(url: str) -> None:
    """What PostgreSQL 15 made the default, done on any major: no role but the
    owner may create in schema public. Before 15 every role may, and a
    superuser then refuses to run a hub there (any role could plant an
    object its code would run)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
