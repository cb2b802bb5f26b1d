"""read_hub_status (behind `python -m provider status`) reads what a schema
has, migrated or not."""

from __future__ import annotations

from typing import Any

import psycopg

from provider.deploy import migrate
from provider.operations.hub_status import read_hub_status
from tests.support.db import new_schema_name


def test_a_schema_never_migrated_has_no_revision_and_nothing_else(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("empty")
    sql.execute(f'CREATE SCHEMA "{schema}"')
    found = read_hub_status(database_url, schema)
    assert (found.revision, found.queues, found.runtime_roles) == (None, [], None)
    assert found.shielded_failures is None


def test_a_migrated_hub_reports_its_revision_queues_and_policy(
    database_url: str, hub_schema: str
) -> None:
    found = read_hub_status(database_url, hub_schema)
    assert found.revision == migrate.head_revision()
    assert sorted(q.queue for q in found.queues) == ["orchestrator", "worker"]
    assert found.runtime_roles == []
    assert found.shielded_failures is not None
    assert found.shielded_failures.policy == "retry"
