"""read_hub_status (behind `python -m provider status`) reads what a schema
has, migrated or not, on its caller's connection."""

from __future__ import annotations

from typing import Any

import psycopg

from provider.client.on_connection import OnConnection
from provider.deploy import migrate, privileged_session
from provider.operations.hub_status import HubStatus, read_hub_status
from tests.support.db import new_schema_name


def status_of(url: str, schema: str) -> HubStatus:
    """As `taskhub-pg status` reads it: the queues by the runbook's plan."""
    with privileged_session.connect(url, autocommit=True, prepare_threshold=None) as conn:
        hub = OnConnection(conn, schema)
        return read_hub_status(conn, schema, lambda: hub.run(hub.plans.queue_health()))


def test_a_schema_never_migrated_has_no_revision_and_nothing_else(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("empty")
    sql.execute(f'CREATE SCHEMA "{schema}"')
    found = status_of(database_url, schema)
    assert (found.revision, found.queues, found.runtime_roles) == (None, [], None)
    assert found.shielded_failures is None


def test_a_migrated_hub_reports_its_revision_queues_and_policy(
    database_url: str, hub_schema: str
) -> None:
    found = status_of(database_url, hub_schema)
    assert found.revision == migrate.head_revision()
    assert sorted(q.queue for q in found.queues) == ["orchestrator", "worker"]
    assert found.runtime_roles == []
    assert found.shielded_failures is not None
    assert found.shielded_failures.policy == "retry"
