"""Shared fixtures: a real PostgreSQL server and fresh task-hub schemas.

The server is, in order of preference: DATABASE_URL; a testcontainers
PostgreSQL when a Docker engine answers; a private throwaway cluster started
from the machine's PostgreSQL binaries (stopped at the end of the session),
kept in memory where the machine has room (tests/support/cluster_folder.py).

With pytest-xdist (`make test` runs the suite in several processes) each
worker process has a server of its own when the cluster is ours, and a
database of its own on a shared server.

Each test gets its own schema. `hub_schema` is created by our Alembic
migrations; `duroxide_schema` by the released duroxide 0.2.2 runtime, so that
defect tests can show they fail on the defective procedures.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Unpack
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from provider import TaskHub, TaskHubSettings
from provider.testing.embedded_pg import EmbeddedPostgres
from tests.support.busy_hub import busy_hub, live_hub  # noqa: F401  (fixtures for every test)
from tests.support.cluster_folder import cluster_folder
from tests.support.db import new_schema_name
from tests.support.docker import docker_engine_answers
from tests.support.flavours import ALL, DUROXIDE_0_2_2, TASKHUB, Flavour
from tests.support.pgbouncer_fixture import start_pgbouncer  # noqa: F401  (a fixture: PgBouncer in front)
from tests.support.server_clock import MoveClock, advance_clock
from tests.support.templates import SchemaTemplates

# One database per xdist worker ("gw0", "gw1", ...) and per run, so that
# workers and runs sharing a DATABASE_URL server never touch each other's
# database, and the suite never drops one it did not create.
TEST_DATABASE = "taskhub_test_{}_{}".format(
    os.environ.get("PYTEST_XDIST_WORKER", "main"), uuid.uuid4().hex[:8]
)


def _with_database(url: str, database: str) -> str:
    """The same server URL with another database (duroxide needs URL syntax)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


@pytest.fixture(scope="session")
def embedded_cluster() -> Iterator[EmbeddedPostgres | None]:
    """The private cluster the tests started, or None when the server is not ours
    (DATABASE_URL or testcontainers): fault tests that restart it skip then."""
    if os.environ.get("DATABASE_URL") or docker_engine_answers():
        yield None
        return
    cluster = EmbeddedPostgres.create(cluster_folder())
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def server_url(embedded_cluster: EmbeddedPostgres | None) -> Iterator[str]:
    """A libpq URL of a PostgreSQL server the tests may create databases on."""
    if embedded_cluster is not None:
        yield embedded_cluster.url
        return
    if url := os.environ.get("DATABASE_URL"):
        yield url.replace("postgresql+psycopg://", "postgresql://")
        return
    from testcontainers.postgres import PostgresContainer

    with PostgresContainer("postgres:15", driver=None) as container:
        yield container.get_connection_url()


@pytest.fixture(scope="session")
def database_url(server_url: str) -> Iterator[str]:
    """A database of our own on that server, created for this session and
    dropped at its end."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{TEST_DATABASE}"')
    yield _with_database(server_url, TEST_DATABASE)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{TEST_DATABASE}" WITH (FORCE)')


@pytest.fixture
def fresh_database(server_url: str) -> Iterator[str]:
    """An empty database of its own, dropped afterwards (for tests of `public`)."""
    name = f"fresh_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def schema_templates(database_url: str) -> SchemaTemplates:
    """Schemas migrated once per session, cloned for each test (tests/support/templates.py)."""
    return SchemaTemplates(database_url)


@pytest.fixture
def hub_schema(schema_templates: SchemaTemplates) -> str:
    """A fresh schema as our Alembic migrations leave it at head (a clone of one they made)."""
    return schema_templates.create(new_schema_name("th"))


@pytest.fixture
def duroxide_schema(database_url: str) -> str:
    """A fresh schema created by the released duroxide 0.2.2 runtime."""
    return DUROXIDE_0_2_2.create_schema(database_url, new_schema_name("dx"))


@pytest.fixture
def make_hub(database_url: str) -> Iterator[Callable[..., TaskHub]]:
    """Factory of TaskHub clients; every client is closed after the test."""
    hubs: list[TaskHub] = []

    def factory(
        schema: str, url: str | None = None, **settings: Unpack[TaskHubSettings]
    ) -> TaskHub:
        """A client of `schema`, connecting as the tests' admin unless `url` says otherwise."""
        settings.setdefault("statement_timeout_ms", 5_000)
        hub = TaskHub.connect(url or database_url, schema, **settings)
        hubs.append(hub)
        return hub

    yield factory
    for hub in hubs:
        hub.close()


@pytest.fixture(scope="session")
def runtime_login(database_url: str) -> Iterator[LoginRole]:
    """A login role with no privileges of its own, for least-privilege runs:
    migrations grant it what a runtime needs (runtime_role=...)."""
    with login_role(database_url) as role:
        yield role


@pytest.fixture
def hub(hub_schema: str, make_hub: Callable[..., TaskHub]) -> TaskHub:
    return make_hub(hub_schema)


@pytest.fixture
def move_clock(database_url: str) -> MoveClock:
    """Moves a hub's lease clock on by so many ms, instead of a sleep until a
    lease or a delay has run out (tests/support/server_clock.py)."""

    def move(hub: TaskHub, ms: int) -> None:
        advance_clock(database_url, hub.config.schema, ms)

    return move


@pytest.fixture
def sql(database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain autocommit connection for setting up and inspecting state."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes `flavour` runs on our schema and on a duroxide 0.2.2 schema.

    `@pytest.mark.pins_defect(reason, fails_on=(...))` names the flavours that
    carry the defect the test is about: the test also runs there and must fail
    (strict xfail), which proves it can fail. `@pytest.mark.also_on(name, ...)`
    names other flavours it runs on and must pass.
    """
    if "flavour" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("pins_defect")
    fails_on: tuple[str, ...] = tuple(marker.kwargs.get("fails_on", ())) if marker else ()
    reason = str(marker.args[0]) if marker and marker.args else ""
    names = [TASKHUB.name, DUROXIDE_0_2_2.name]
    also = metafunc.definition.get_closest_marker("also_on")
    names += [name for name in (also.args if also else ()) if name not in names]
    names += [name for name in fails_on if name not in names]
    params = []
    for name in names:
        marks = (
            # A defect flavour must fail: it needs no quiet machine, so a
            # `timing` test runs its defect flavours in the parallel part.
            [pytest.mark.xfail(strict=True, reason=reason), pytest.mark.defect_flavour]
            if name in fails_on
            else []
        )
        params.append(pytest.param(ALL[name], id=name, marks=marks))
    metafunc.parametrize("flavour", params)


@pytest.fixture
def flavour_schema(flavour: Flavour, new_flavour_schema: Callable[[Flavour], str]) -> str:
    """A fresh schema of the flavour under test."""
    return new_flavour_schema(flavour)


@pytest.fixture
def new_flavour_schema(
    database_url: str, schema_templates: SchemaTemplates
) -> Callable[[Flavour], str]:
    """Makes fresh schemas of a flavour: a clone where the flavour is what
    the migrations leave at a revision, else built as the flavour says."""

    def create(flavour: Flavour) -> str:
        schema = new_schema_name(flavour.prefix)
        if flavour.migrated_to is not None:
            return schema_templates.create(schema, revision=flavour.migrated_to)
        return flavour.create_schema(database_url, schema)

    return create


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pins_defect(reason, fails_on): the test pins a defect; it must fail on those flavours",
    )
    config.addinivalue_line(
        "markers",
        "also_on(*flavours): a flavour test runs on these flavours too, and passes",
    )
    config.addinivalue_line(
        "markers", "defect_flavour: this run of a pins_defect test is on a flavour that must fail"
    )
