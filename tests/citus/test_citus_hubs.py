"""Hubs on a Citus cluster by schema-based sharding (`citus=schema`): the
contract's every procedure, the contention workload, the duroxide 0.2.2
runtime, and several hubs on different workers at once. Opt-in: see
conftest.py (CITUS_DATABASE_URL, a coordinator with two workers or more)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.roles import login_role
from devkit.workloads.contention import ContentionSettings, run_contention, seed_hot_instances
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    metadata,
    orchestration_started,
    start_orchestration,
    timer_fired,
)
from provider import TagFilter, TaskHub
from provider.client.call_observers import add_call_observer, remove_call_observer
from provider.deploy import migrate
from provider.errors import TaskHubError
from tests.citus.conftest import placement, workers
from tests.runtime import test_duroxide_runtime as scenarios
from tests.support import drift as drift_check
from tests.support.alembic_cli import alembic
from tests.support.contract import CONTRACT_FUNCTIONS
from tests.support.db import new_schema_name


def test_a_distributed_hub_passes_the_drift_check(citus_url: str, citus_hub: str) -> None:
    report = drift_check.check(citus_url, citus_hub)
    assert report.problems == []
    host, port = placement(citus_url, citus_hub)
    assert (host, port) in workers(citus_url)


def test_citus_schema_needs_citus(database_url: str, sql: psycopg.Connection[Any]) -> None:
    """On plain PostgreSQL (the suite's own server) the option is refused and
    nothing is created. Runs in the Citus suite, whatever the cluster says."""
    schema = new_schema_name("nocit")
    with pytest.raises(Exception, match="needs the Citus extension"):
        migrate.upgrade(database_url, schema, citus="schema")
    assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-x", "citus=rows", "upgrade", "head"], "the one mode is citus=schema"),
        (["-x", "citus=schema", "upgrade", "head"], "needs the Citus extension"),
    ],
)
def test_the_alembic_citus_option_refuses_bad_input_and_creates_nothing(
    database_url: str, sql: psycopg.Connection[Any], argv: list[str], message: str
) -> None:
    """Plain PostgreSQL, like the test above: an unknown mode, or no Citus."""
    schema = new_schema_name("nocit")
    run = alembic("-x", f"schema={schema}", *argv, url=database_url)
    assert run.returncode != 0 and message in run.stderr
    assert sql.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,)


def test_every_contract_procedure_runs_on_a_distributed_hub(citus_url: str, citus_hub: str) -> None:
    called: set[str] = set()
    failed: list[str] = []

    def seen(schema: str, operation: str, seconds: float, failure: TaskHubError | None) -> None:
        called.add(operation)
        if failure is not None and failure.sqlstate not in ("TH001", "22023"):
            failed.append(f"{operation}: {failure}")

    add_call_observer(seen)
    try:
        with (
            TaskHub.connect(citus_url, citus_hub) as hub,
            psycopg.connect(citus_url, autocommit=True) as conn,
        ):
            exercise_the_contract(hub, conn, citus_hub)
            called.update({"renew_orchestration_item_lock", "renew_work_item_lock"})
            conn.execute(f'SELECT "{citus_hub}".cleanup_schema()')
            called.add("cleanup_schema")
    finally:
        remove_call_observer(seen)
        with psycopg.connect(citus_url, autocommit=True) as conn:
            # cleanup_schema leaves the (distributed) schema itself.
            conn.execute(f'DROP SCHEMA IF EXISTS "{citus_hub}" CASCADE')
    assert failed == []
    assert sorted(set(CONTRACT_FUNCTIONS) - called) == []


def exercise_the_contract(hub: TaskHub, conn: psycopg.Connection[Any], schema: str) -> None:
    """Every contract procedure at least once: through the provider, and the
    runtime's second-granularity renewals (the provider renews in ms) by SQL."""
    renew = "SELECT {q}.{fn}(%s, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 30)"
    for n in range(2):
        hub.enqueue_orchestrator_work(f"c{n}", start_orchestration(f"c{n}"))
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None
    hub.renew_orchestration_item_lock(item.lock_token, 30_000)
    conn.execute(
        renew.format(q=f'"{schema}"', fn="renew_orchestration_item_lock"), [item.lock_token]
    )
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[orchestration_started(item.instance_id)],
        worker_items=[activity_execute(item.instance_id, 1, session_id="s1")],
        orchestrator_items=[timer_fired(item.instance_id, 2, 0)],
        metadata=metadata(),
    )
    lease = hub.fetch_work_item(30_000, owner_id="w1", tags=TagFilter.any())
    assert lease is not None
    hub.renew_work_item_lock(lease.lock_token, 30_000)
    conn.execute(renew.format(q=f'"{schema}"', fn="renew_work_item_lock"), [lease.lock_token])
    hub.renew_session_lock(["w1"], 30_000, 60_000)
    hub.ack_work_item(lease.lock_token, activity_completed(item.instance_id, 1))
    hub.enqueue_worker_work(activity_execute("c9", 3))
    again = hub.fetch_work_item(30_000)
    assert again is not None
    hub.abandon_work_item(again.lock_token)
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    hub.abandon_orchestration_item(turn.lock_token)
    hub.cleanup_orphaned_sessions()
    instance = item.instance_id
    hub.append_history(instance, 1, [orchestration_started(instance)])
    hub.read_history(instance)
    hub.read_history(instance, 1)
    hub.list_instances()
    hub.list_executions(instance)
    hub.latest_execution_id(instance)
    hub.list_instances_by_status("Running")
    hub.get_instance_info(instance)
    hub.get_execution_info(instance, 1)
    hub.get_system_metrics()
    hub.get_queue_depths()
    hub.list_children(instance)
    hub.get_parent_id(instance)
    hub.get_custom_status(instance)
    hub.get_kv_value(instance, "k")
    hub.get_kv_all_values(instance)
    hub.get_instance_stats(instance)
    hub.prune_executions(instance, keep_last=1)
    hub.delete_instance(instance, force=True)


def test_contended_dispatchers_get_whole_leases_on_a_distributed_hub(
    citus_url: str, citus_hub: str
) -> None:
    settings = ContentionSettings(
        dispatchers=8, hot_instances=4, history_events=500, lock_timeout_ms=1_000, duration_s=4.0
    )
    with psycopg.connect(citus_url, autocommit=True) as conn:
        seed_hot_instances(conn, citus_hub, settings)
    result = run_contention(citus_url, citus_hub, settings)
    assert result.turns > 0
    assert (result.expired_leases, result.ack_failures, result.deadlocks) == (0, 0, 0)
    assert result.other_errors == []


RUNTIME_SCENARIOS: list[Callable[[Any], None]] = [
    scenarios.test_connecting_finds_nothing_to_migrate,
    scenarios.test_activity_returns_its_result,
    scenarios.test_fan_out_fan_in_with_a_timer,
    scenarios.test_external_event_reaches_the_waiting_orchestration,
    scenarios.test_sub_orchestrations_report_to_their_parent,
    scenarios.test_continue_as_new_starts_new_executions_and_keeps_kv,
    scenarios.test_activity_retries_until_it_succeeds,
    scenarios.test_session_activities_run_on_one_worker,
    scenarios.test_event_queue_buffers_messages_in_order,
    scenarios.test_key_value_state_is_readable_by_clients,
    scenarios.test_cancelling_an_instance_ends_it,
    scenarios.test_many_concurrent_instances_all_complete,
]


def started_runtime(url: str, schema: str) -> tuple[Any, Any]:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(
            dispatcher_poll_interval_ms=10, orchestration_concurrency=4, worker_concurrency=4
        ),
    )
    scenarios.register(runtime)
    runtime.start()
    return runtime, duroxide.Client(provider)


@pytest.mark.parametrize("scenario", RUNTIME_SCENARIOS, ids=lambda f: f.__name__[5:])
def test_the_duroxide_runtime_on_a_distributed_hub(
    citus_url: str, citus_hub: str, scenario: Callable[[Any], None]
) -> None:
    runtime, client = started_runtime(citus_url, citus_hub)
    try:
        scenario(scenarios.RuntimeOnOurSchema(client, citus_hub, citus_url))
    finally:
        runtime.shutdown(timeout_ms=2_000)


def test_hubs_on_different_workers_each_serve_their_runtime(citus_url: str) -> None:
    (first_node, second_node) = workers(citus_url)[:2]
    hubs = [new_schema_name("cit") for _ in range(2)]
    for schema in hubs:
        migrate.upgrade(citus_url, schema, citus="schema")
    try:
        with psycopg.connect(citus_url, autocommit=True) as conn:
            for schema, (host, port) in zip(hubs, (first_node, second_node), strict=True):
                if placement(citus_url, schema) != (host, port):
                    # block_writes: the wakeup listeners' table is unlogged, and
                    # logical replication (the default) cannot copy it.
                    conn.execute(
                        "SELECT citus_schema_move(%s::regnamespace, %s, %s, 'block_writes')",
                        [schema, host, port],
                    )
        assert {placement(citus_url, schema) for schema in hubs} == {first_node, second_node}

        outputs: dict[str, Any] = {}

        def serve(schema: str) -> None:
            runtime, client = started_runtime(citus_url, schema)
            try:
                ids = [f"{schema}-{n}" for n in range(5)]
                for instance in ids:
                    client.start_orchestration(instance, "SumOfSquares", 4)
                outputs[schema] = [scenarios.completed_output(client, i) for i in ids]
            finally:
                runtime.shutdown(timeout_ms=2_000)

        threads = [threading.Thread(target=serve, args=(schema,)) for schema in hubs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert outputs == {schema: [14] * 5 for schema in hubs}
    finally:
        for schema in hubs:
            migrate.downgrade(citus_url, schema, "base")


def test_a_runtime_role_with_least_privilege_works_on_a_distributed_hub(citus_url: str) -> None:
    schema = new_schema_name("cit")
    with login_role(citus_url) as role:
        migrate.upgrade(
            citus_url, schema, runtime_role=role.name, runtime_ddl="none", citus="schema"
        )
        try:
            with TaskHub.connect(role.url_on(citus_url), schema) as hub:
                hub.enqueue_orchestrator_work("lp", start_orchestration("lp"))
                item = hub.fetch_orchestration_item(30_000)
                assert item is not None
                hub.ack_orchestration_item(
                    item.lock_token,
                    1,
                    history_delta=[orchestration_started("lp")],
                    worker_items=[activity_execute("lp", 1)],
                    metadata=metadata(),
                )
                lease = hub.fetch_work_item(30_000)
                assert lease is not None
                hub.ack_work_item(lease.lock_token, activity_completed("lp", 1))
            with (
                psycopg.connect(role.url_on(citus_url), autocommit=True) as conn,
                pytest.raises(psycopg.errors.InsufficientPrivilege),
            ):
                conn.execute(f'DELETE FROM "{schema}".worker_queue')
        finally:
            with psycopg.connect(citus_url, autocommit=True) as conn:
                conn.execute(f'SELECT "{schema}".taskhub_revoke_runtime_role(%s)', [role.name])
            migrate.downgrade(citus_url, schema, "base")


def test_a_later_revisions_tables_join_the_distributed_schema(
    citus_url: str, citus_hub: str
) -> None:
    """What a later revision's CREATE TABLE does in a distributed hub."""
    with psycopg.connect(citus_url, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{citus_hub}".a_later_table (instance_id text PRIMARY KEY)')
        row = conn.execute(
            "SELECT citus_table_type FROM citus_tables WHERE table_name = %s::regclass",
            [f'"{citus_hub}".a_later_table'],
        ).fetchone()
        conn.execute(f'DROP TABLE "{citus_hub}".a_later_table')
    assert row == ("schema",)


def test_roles_granted_after_distribution_get_every_privilege(
    citus_url: str, citus_hub: str
) -> None:
    """A runtime or operator role added once the hub is distributed (the
    runbook's routes): its grants are matched against the coordinator's
    catalogue, not the worker's that holds the list of what to grant."""
    q = f'"{citus_hub}"'
    with (
        login_role(citus_url) as runtime,
        login_role(citus_url, prefix="operator") as operator,
        psycopg.connect(citus_url, autocommit=True) as conn,
    ):
        conn.execute(f"SELECT {q}.taskhub_grant_runtime_role(%s, 'none')", [runtime.name])
        conn.execute(f"SELECT {q}.taskhub_grant_operator_role(%s)", [operator.name])
        try:
            needed = conn.execute(
                f"SELECT object_name FROM {q}.taskhub_runtime_privileges"
                " WHERE object_kind = 'function'"
            ).fetchall()
            missing = conn.execute(
                "SELECT p.proname FROM pg_proc AS p"
                " WHERE p.pronamespace = %s::regnamespace"
                "   AND p.proname = ANY (%s) AND NOT has_function_privilege(%s, p.oid, 'EXECUTE')",
                [citus_hub, [name for (name,) in needed], runtime.name],
            ).fetchall()
            assert len(needed) > 30
            assert missing == []
            assert drift_check.check(citus_url, citus_hub).problems == []
            with psycopg.connect(operator.url_on(citus_url), autocommit=True) as as_operator:
                drift = as_operator.execute(f"SELECT count(*) FROM {q}.taskhub_check_drift()")
                assert drift.fetchone() == (0,)
                found = as_operator.execute(f"SELECT count(*) FROM {q}.taskhub_find_instances()")
                assert found.fetchone() == (0,)
        finally:
            conn.execute(f"SELECT {q}.taskhub_revoke_runtime_role(%s)", [runtime.name])
            conn.execute(f"SELECT {q}.taskhub_revoke_operator_role(%s)", [operator.name])
