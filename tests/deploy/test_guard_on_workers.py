"""The DDL guard's script for a Citus worker (provider/deploy/ddl_guard.py,
worker_script) runs on a session of the worker's own, as the installing
role, where none of the coordinator's checks apply. Citus sends it as it is
(run_command_on_workers); here a plain database that the hub's owner owns
stands in for the worker, and the superuser runs the same text on it.

Found by the fourth attack on 8f91b51 (docs/security.md), where the
worker's statements were sent unpinned and unchecked: a guard schema the
owner planted on a worker ran its trigger as the superuser, and the event
trigger the step created there ran the owner's function at every DDL
afterwards; a domain named like a type, on a database search_path, ran its
check as the superuser.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from provider.deploy import ddl_guard, privileged_session
from tests.support.owned_hubs import OwnedDatabase, owned_database, runs_as_another_role

PLANTED_GUARD = """
CREATE SCHEMA taskhub_guard;
CREATE TABLE taskhub_guard.guarded_roles (hub_schema name NOT NULL, role_name name NOT NULL,
  had_database_create boolean NOT NULL, guarded_at timestamptz NOT NULL,
  PRIMARY KEY (hub_schema, role_name));
CREATE FUNCTION taskhub_guard.planted() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM orders.record_run(); RETURN NULL; END $$;
CREATE TRIGGER planted AFTER INSERT OR DELETE ON taskhub_guard.guarded_roles
  FOR EACH STATEMENT EXECUTE FUNCTION taskhub_guard.planted();
CREATE FUNCTION taskhub_guard.refuse_runtime_ddl() RETURNS event_trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM orders.record_run(); END $$;
"""


@pytest.fixture
def worker(server_url: str) -> Iterator[OwnedDatabase]:
    with owned_database(server_url) as owned:
        yield owned


@pytest.fixture
def script(fresh_database: str, worker: OwnedDatabase) -> str:
    """The script a coordinator with one guarded role sends its workers."""
    with privileged_session.connect(fresh_database, autocommit=True) as conn:
        with conn.transaction():
            ddl_guard.install(conn)
            ddl_guard.add(conn, "orders", worker.runtime)
        return ddl_guard.worker_script(conn)


def event_trigger_owner(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT p.proowner::regrole::text FROM pg_event_trigger AS e"
            " JOIN pg_proc AS p ON p.oid = e.evtfoid WHERE e.evtname = 'taskhub_runtime_ddl_guard'"
        ).fetchone()
    return None if row is None else str(row[0])


def test_a_guard_the_owner_planted_on_a_worker_is_refused(
    worker: OwnedDatabase, script: str
) -> None:
    worker.as_owner(PLANTED_GUARD)
    with (
        psycopg.connect(worker.superuser_url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.RaiseException, match="cannot trust"),
    ):
        conn.execute(script)
    assert runs_as_another_role(worker) == (0, [])
    assert event_trigger_owner(worker.superuser_url) is None


def test_a_type_shadowed_on_the_workers_search_path_is_never_used(
    worker: OwnedDatabase, script: str
) -> None:
    worker.as_owner(
        "CREATE SCHEMA shadow",
        "CREATE DOMAIN shadow.timestamptz AS pg_catalog.timestamptz CHECK (orders.record_run())",
        "CREATE DOMAIN shadow.name AS pg_catalog.name CHECK (orders.record_run())",
        f'ALTER DATABASE "{worker.name}" SET search_path = shadow, pg_catalog',
    )
    with psycopg.connect(worker.superuser_url, autocommit=True) as conn:
        conn.execute(script)
        schemas = conn.execute(
            "SELECT t.typnamespace::pg_catalog.regnamespace::pg_catalog.text"
            "  FROM pg_catalog.pg_attribute AS a"
            "  JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid"
            " WHERE a.attrelid = 'taskhub_guard.guarded_roles'::pg_catalog.regclass"
            "   AND a.attnum > 0"
        ).fetchall()
    assert {schema for (schema,) in schemas} == {"pg_catalog"}
    assert runs_as_another_role(worker) == (0, [])
    assert event_trigger_owner(worker.superuser_url) not in (None, worker.owner)


def test_a_worker_session_made_to_act_as_the_owner_is_refused(
    worker: OwnedDatabase, script: str
) -> None:
    worker.as_owner(f'ALTER DATABASE "{worker.name}" SET role = {worker.owner}')
    with (
        psycopg.connect(worker.superuser_url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.RaiseException, match="acts as"),
    ):
        conn.execute(script)
    assert runs_as_another_role(worker) == (0, [])
    assert event_trigger_owner(worker.superuser_url) is None
