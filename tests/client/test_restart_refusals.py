"""Restart's edges, found by a fresh attacker (issue 58): an operator runs
again what ran and writes no start of its choosing (no other input, no id the
scheduler or the runtime gives); a restart never brings back an instance a
delete or a prune took; a restarted sub-orchestration is a root; an id that
was deleted and used again restarts as new; the dashboard restarts the
instance its page names, spaces and all. No runtime needed: failed instances
are written as the released runtime leaves them (tests/support)."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from devkit.roles import operator_of
from devkit.waiting import wait_until
from provider import Client, InstanceNotFound, InvalidInput, PermanentError, TaskHub
from provider.dashboard.app import dashboard_app
from tests.support.dashboard import LOCAL, act
from tests.support.failed_instance import failed_order


def executions(sql: psycopg.Connection[Any], schema: str, instance_id: str) -> list[Any]:
    return sql.execute(
        f'SELECT execution_id, status FROM "{schema}".executions WHERE instance_id = %s ORDER BY 1',
        [instance_id],
    ).fetchall()


def test_an_operator_gives_no_other_input_and_no_id_the_hub_gives(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    failed_order(hub, "order-1")
    with (
        operator_of(database_url, hub_schema) as operator,
        Client.connect(operator.url, hub_schema) as client,
    ):
        with pytest.raises(PermanentError, match="permission denied"):
            client.restart("order-1", input={"card": "attacker's"})
        for taken in ("schedule:nightly:2026-12-08T01:00:00Z", "parent-1::sub::4"):
            with pytest.raises(InvalidInput, match="scheduler's and the runtime's to give"):
                client.restart("order-1", new_instance_id=taken)
        # What it may do: run again what ran, here or under a new id.
        assert client.restart("order-1", new_instance_id="order-1-r").new_execution_id == 1
    assert executions(sql, hub_schema, "order-1") == [(1, "Failed")]
    # The application gives another input (its own role or the owner's).
    with Client.connect(database_url, hub_schema) as client:
        assert client.restart("order-1", input={"card": "new"}).new_execution_id == 2
    start = sql.execute(
        f"SELECT work_item FROM \"{hub_schema}\".orchestrator_queue WHERE instance_id = 'order-1'"
    ).fetchone()
    assert start is not None and '"input":"{\\"card\\": \\"new\\"}"' in start[0]


def test_a_restart_waits_for_a_delete_and_then_finds_nothing(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """It brought the deleted instance back: an execution 2, its start, a
    record, and no instance row."""
    failed_order(hub, "race-1")
    q = f'"{hub_schema}"'
    outcome: list[BaseException | None] = []
    with psycopg.connect(database_url) as deleting:
        deleting.execute(f"SELECT * FROM {q}.delete_instances_atomic(ARRAY['race-1'], false)")

        def restart() -> None:
            try:
                with Client.connect(database_url, hub_schema) as client:
                    client.restart("race-1")
                outcome.append(None)
            except BaseException as error:  # the thread's outcome, for the test
                outcome.append(error)

        racer = threading.Thread(target=restart)
        racer.start()
        # The restart waits on the instance's row, which the delete holds.
        waiting = "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
        wait_until(lambda: sql.execute(waiting).fetchone() != (0,), timeout_s=10)
        deleting.commit()
        racer.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], InstanceNotFound), outcome
    assert executions(sql, hub_schema, "race-1") == []
    assert sql.execute(f"SELECT count(*) FROM {q}.orchestrator_queue").fetchone() == (0,)
    assert sql.execute(f"SELECT count(*) FROM {q}.taskhub_restarts").fetchone() == (0,)


def test_a_restarted_sub_orchestration_is_a_root(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """A prune of its ended parent took it with it, mid-run."""
    failed_order(hub, "parent-1::sub::2")
    q = f'"{hub_schema}"'
    sql.execute(
        f"UPDATE {q}.instances SET parent_instance_id = 'parent-1'"
        " WHERE instance_id = 'parent-1::sub::2'"
    )
    with Client.connect(database_url, hub_schema) as client:
        client.restart("parent-1::sub::2")
    parent = sql.execute(
        f"SELECT parent_instance_id FROM {q}.instances WHERE instance_id = 'parent-1::sub::2'"
    ).fetchone()
    assert parent == (None,)


def test_an_id_deleted_and_used_again_restarts_as_new(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """Its earlier life's restart answered "restarted already" and the new
    one stayed failed; the record of a deleted instance also kept its input
    and failure forever."""
    failed_order(hub, "reuse-1")
    q = f'"{hub_schema}"'
    with Client.connect(database_url, hub_schema) as client:
        client.restart("reuse-1", execution_id=1)
        hub.delete_instance("reuse-1", force=True)
        assert sql.execute(f"SELECT count(*) FROM {q}.taskhub_restarts").fetchone() == (0,)
        failed_order(hub, "reuse-1")
        again = client.restart("reuse-1", execution_id=1)
    assert (again.repeated, again.new_execution_id) == (False, 2)
    assert executions(sql, hub_schema, "reuse-1") == [(1, "Failed"), (2, "Running")]


def test_a_number_beyond_an_execution_is_bad_input(hub: TaskHub, database_url: str) -> None:
    failed_order(hub, "big-1")
    with (
        Client.connect(database_url, hub.config.schema) as client,
        pytest.raises(InvalidInput, match="execution_id"),
    ):
        client.restart("big-1", execution_id=2**70)


def test_the_dashboard_restarts_the_instance_its_page_names_spaces_and_all(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """The form's " w1" was stripped to "w1", another instance."""
    failed_order(hub, " w1")
    failed_order(hub, "w1")
    app = dashboard_app(database_url, hub_schema, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as dashboard:
        act(dashboard, "restart", {"instance_id": " w1"}, "/instances/%20w1")
    assert executions(sql, hub_schema, " w1") == [(1, "Failed"), (2, "Running")]
    assert executions(sql, hub_schema, "w1") == [(1, "Failed")]
