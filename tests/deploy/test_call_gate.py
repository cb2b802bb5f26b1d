"""The call gate: a call that arrives while a migration holds the gate waits at
its first statement, then runs the definition the migration left, even when
the migration dropped what the old body used; and every function the runtime
calls passes the gate first."""

from __future__ import annotations

import re
import threading
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until
from provider.deploy import live_signatures, migrate, table_locks
from provider.resources import sql_dir
from tests.support.db import new_schema_name

GATED_PROLOGUE = re.compile(
    r"^BEGIN\n(?:    --.*\n)*    IF NOT pg_try_advisory_xact_lock_shared\("
    r"hashtextextended\('taskhub:__SCHEMA__:calls', 0\)\) THEN\n",
    re.M,
)


def test_every_function_the_runtime_calls_passes_the_gate_first() -> None:
    for name in live_signatures.RUNTIME_FUNCTIONS:
        [path] = [
            p
            for p in (sql_dir() / "head").glob("*/*.sql")
            if f"CREATE FUNCTION __SCHEMA__.{name}(" in p.read_text()
        ]
        assert GATED_PROLOGUE.search(path.read_text()), f"{path}: {name} does not start at the gate"


def call_in_thread(url: str, query: str, params: list[Any]) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def call() -> None:
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                result.append(conn.execute(query, params).fetchall())
        except Exception as error:  # the test reports it
            result.append(error)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, result


@pytest.mark.parametrize(
    "hub_revision",
    [
        "head",
        pytest.param(
            "0014",
            marks=pytest.mark.xfail(
                strict=True,
                reason="without the gate the call waits half-way through its body, on a"
                " table lock, and resumes into a schema without the wakeup listeners",
            ),
        ),
    ],
)
def test_a_call_held_at_the_gate_during_a_downgrade_runs_the_older_body(
    database_url: str, hub_revision: str
) -> None:
    """head's enqueue reads the wakeup listeners' table, which the downgrade
    below 0009 drops: a call that waited at the gate runs the older body."""
    schema, revision = new_schema_name("gate"), "0005"
    migrate.upgrade(database_url, schema, hub_revision)
    downgraded: list[Any] = []
    with psycopg.connect(database_url) as holder:
        # Keeps the downgrade waiting for a table after it closed the gate.
        holder.execute(f'SELECT count(*) FROM "{schema}".orchestrator_queue')

        def downgrade() -> None:
            downgraded.append(
                migrate.downgrade(
                    database_url, schema, revision, lock_timeout_ms=5000, lock_attempts=1
                )
            )

        migration = threading.Thread(target=downgrade, daemon=True)
        migration.start()
        try:
            wait_until_gate_is_held(database_url, schema)
            thread, result = call_in_thread(
                database_url,
                f'SELECT "{schema}".enqueue_orchestrator_work(%s, %s, now())',
                ["gated", '{"StartOrchestration": {"instance": "gated"}}'],
            )
            thread.join(0.5)
            assert thread.is_alive(), f"the call did not wait: {result}"
        finally:
            # Whatever failed above, the downgrade ends inside this test: a
            # migration thread left running shares Alembic's process-global
            # context with the next test's migration (one failed so in CI).
            holder.rollback()
            migration.join(30)
    thread.join(10)
    assert downgraded and downgraded[0].to_revision == revision
    assert result and not isinstance(result[0], Exception), result
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(f'SELECT instance_id FROM "{schema}".orchestrator_queue').fetchall()
        assert rows == [("gated",)]


def wait_until_gate_is_held(url: str, schema: str) -> None:
    label = table_locks.call_gate_label(schema)
    with psycopg.connect(url, autocommit=True) as conn:

        def held() -> bool:
            row = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND mode = 'ExclusiveLock'"
                " AND objid = (hashtextextended(%s, 0) & 4294967295)::oid",
                [label],
            ).fetchone()
            return bool(row and row[0])

        wait_until(held, timeout_s=4, message="the downgrade to close the gate")


def test_a_blocked_call_resumes_on_the_new_definition(database_url: str) -> None:
    schema = new_schema_name("gate")
    migrate.upgrade(database_url, schema)
    with psycopg.connect(database_url) as migration:
        migration.execute(table_locks.call_gate_statement(schema))
        thread, result = call_in_thread(
            database_url, f'SELECT "{schema}".latest_execution_id(%s)', ["nobody"]
        )
        thread.join(0.5)
        assert thread.is_alive()
        # What a downgrade does: drop a table the old body reads, replace the body.
        migration.execute(f'DROP TABLE "{schema}".taskhub_wakeup_listeners')
        migration.execute(
            f'CREATE OR REPLACE FUNCTION "{schema}".latest_execution_id(p_instance_id text)'
            " RETURNS bigint LANGUAGE sql AS 'SELECT 42::bigint'"
        )
        migration.commit()
    thread.join(10)
    assert result == [[(42,)]]
