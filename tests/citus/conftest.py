"""The opt-in Citus suite: it runs when CITUS_DATABASE_URL names a Citus
coordinator with at least two workers, and is skipped with the reason
otherwise. Citus is not packaged for every machine: see docs/scale-out.md."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest

from provider.deploy import migrate
from tests.support.db import new_schema_name

WORKERS_NEEDED = 2


def _citus_url() -> str:
    url = os.environ.get("CITUS_DATABASE_URL")
    if not url:
        pytest.skip("CITUS_DATABASE_URL is not set: no Citus coordinator to run on")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            found = conn.execute(
                "SELECT count(*) FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0"
            ).fetchone()
    except psycopg.Error as error:
        pytest.skip(f"CITUS_DATABASE_URL does not name a Citus coordinator: {error}")
    workers = int(found[0]) if found else 0
    if workers < WORKERS_NEEDED:
        pytest.skip(f"the Citus cluster has {workers} workers; the suite needs {WORKERS_NEEDED}")
    return url


@pytest.fixture(scope="session")
def citus_url() -> str:
    return _citus_url()


@pytest.fixture
def citus_hub(citus_url: str) -> Iterator[str]:
    """A hub migrated with citus=schema on the coordinator; downgraded to base after."""
    schema = new_schema_name("cit")
    migrate.upgrade(citus_url, schema, citus="schema")
    yield schema
    migrate.downgrade(citus_url, schema, "base")


def workers(url: str) -> list[tuple[str, int]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT nodename, nodeport FROM pg_dist_node"
            " WHERE noderole = 'primary' AND groupid <> 0 ORDER BY nodeport"
        ).fetchall()
    return [(str(host), int(port)) for host, port in rows]


def placement(url: str, schema: str) -> tuple[str, int]:
    """The worker that holds the hub's schema."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT DISTINCT nodename, nodeport FROM citus_shards"
            " WHERE citus_table_type = 'schema' AND table_name::text LIKE %s",
            [f"{schema}.%"],
        ).fetchone()
    assert row is not None, f"{schema} is not distributed"
    return str(row[0]), int(row[1])
