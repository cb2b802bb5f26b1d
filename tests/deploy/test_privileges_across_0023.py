"""Revision 0023 across hubs made before it: an operator role granted at
0022 (SELECT ON ALL TABLES IN SCHEMA, EXECUTE on the functions that take a
work item or a delay) holds after the upgrade exactly what the hub lists,
and nothing on the application's table beside the hub; revoking it then
takes everything back; a downgrade gives 0022's grants back. A threshold
the fetch could not read is set back to its default by the upgrade."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.roles import LoginRole, operator_of
from devkit.workloads.work_items import start_orchestration
from provider import TaskHub, TaskHubError
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.privileges import held, listed

RAW_FUNCTIONS = (
    "enqueue_orchestrator_work(text,text,timestamptz,text,text,bigint)",
    "taskhub_enqueue_traced_orchestrator_work(text,text,timestamptz,text,text)",
    "abandon_work_item(text,bigint,bigint,boolean)",
)


@pytest.fixture
def hub_at_0022(database_url: str) -> str:
    """A hub at 0022 with an application's table beside it in its schema."""
    schema = new_schema_name("op23")
    migrate.upgrade(database_url, schema, "0022")
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{schema}".customers (id int, card_number text)')
    return schema


@pytest.fixture
def operator(database_url: str, hub_at_0022: str) -> Iterator[LoginRole]:
    with operator_of(database_url, hub_at_0022) as role:
        yield role


def may(conn: psycopg.Connection[Any], role: str, schema: str) -> dict[str, bool]:
    """Whether `role` may read the application's table and call each raw function."""
    checks = {
        "read customers": f"has_table_privilege(%(role)s, '\"{schema}\".customers', 'SELECT')"
    }
    for function in RAW_FUNCTIONS:
        name = function.split("(")[0]
        checks[name] = f"has_function_privilege(%(role)s, '\"{schema}\".{function}', 'EXECUTE')"
    row = conn.execute("SELECT " + ", ".join(checks.values()), {"role": role}).fetchone()
    assert row is not None
    return dict(zip(checks, row, strict=True))


def test_the_upgrade_takes_back_what_earlier_revisions_gave_an_operator(
    database_url: str, hub_at_0022: str, operator: LoginRole
) -> None:
    schema = hub_at_0022
    with psycopg.connect(database_url, autocommit=True) as conn:
        # What 0022 gave: the application's table and the raw writes.
        assert set(may(conn, operator.name, schema).values()) == {True}

        migrate.upgrade(database_url, schema)

        assert set(may(conn, operator.name, schema).values()) == {False}
        assert held(conn, operator.name, schema) == listed(conn, schema)
    with psycopg.connect(operator.url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f'SELECT * FROM "{schema}".customers')
        conn.execute(f'SELECT * FROM "{schema}".taskhub_queue_health')

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'SELECT "{schema}".taskhub_revoke_operator_role(%s)', [operator.name])
        assert held(conn, operator.name, schema) == set()


def test_a_downgrade_gives_an_operator_0022s_grants_back(
    database_url: str, hub_at_0022: str, operator: LoginRole
) -> None:
    schema = hub_at_0022
    migrate.upgrade(database_url, schema)
    migrate.downgrade(database_url, schema, "0022")
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert set(may(conn, operator.name, schema).values()) == {True}
    migrate.upgrade(database_url, schema)
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert set(may(conn, operator.name, schema).values()) == {False}
        assert held(conn, operator.name, schema) == listed(conn, schema)


def redeliver(hub: TaskHub) -> None:
    """Hand out a turn and give it back; the fetch that follows redelivers it
    (and reads the dead-letter threshold)."""
    hub.enqueue_orchestrator_work("again", start_orchestration("again"))
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None
    hub.abandon_orchestration_item(item.lock_token)


def test_the_upgrade_sets_a_threshold_the_fetch_cannot_read_back_to_its_default(
    database_url: str,
    make_hub: Callable[..., TaskHub],
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = new_schema_name("op23")
    migrate.upgrade(database_url, schema, "0022")
    threshold = f"\"{schema}\".taskhub_settings WHERE name = 'dead_letter_after_attempts'"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".taskhub_settings SET value = %s'
            " WHERE name = 'dead_letter_after_attempts'",
            ["fifty"],
        )
    hub = make_hub(schema)
    redeliver(hub)
    with pytest.raises(TaskHubError, match="invalid input syntax for type integer"):
        hub.fetch_orchestration_item(30_000)  # what 0022 does with it

    with caplog.at_level(logging.INFO, logger="sqlalchemy.dialects.postgresql"):
        migrate.upgrade(database_url, schema)

    warnings = [
        r.getMessage() for r in caplog.records if "dead_letter_after_attempts" in r.getMessage()
    ]
    assert len(warnings) == 1 and "'fifty'" in warnings[0] and "50" in warnings[0]
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute(f"SELECT value FROM {threshold}").fetchone() == ("50",)
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == "again" and item.attempt_count == 2
