"""One hop per call on a distributed hub (issue 27): clients connect to the
node that holds the hub (`taskhub-pg citus placement`, `citus_direct`), the
hot path plans like plain PostgreSQL there, migrations close the call gate on
the node too, and a hub moves to another worker under its runtime."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import psycopg
import pytest

from devkit.roles import login_role
from provider import AsyncTaskHub, TaskHub
from provider.citus_placement import Node, node_url
from provider.cli.app import main
from provider.deploy import migrate
from provider.deploy.refusals import MigrationLocksNotTaken
from provider.deploy.table_locks import call_gate_statement
from provider.operations import citus
from tests.citus.conftest import placement, workers
from tests.citus.test_citus_hubs import exercise_the_contract, started_runtime
from tests.runtime import test_duroxide_runtime as scenarios
from tests.support.db import new_schema_name

HOT_PATH = ("fetch_orchestration_item", "ack_orchestration_item", "fetch_work_item", "ack_worker")
CUSTOM_PLAN_HELPERS = (
    "taskhub_apply_kv_mutations",
    "taskhub_bury_orchestrator_messages",
    "taskhub_bury_work_item",
)


def node_of(citus_url: str, schema: str) -> str:
    with psycopg.connect(citus_url, autocommit=True) as conn:
        return citus.placement(conn, citus_url, schema).url


def plan_modes(url: str, schema: str) -> dict[str, str | None]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname::text,"
            "       (SELECT c FROM unnest(p.proconfig) AS c WHERE c LIKE 'plan_cache_mode=%%')"
            "  FROM pg_proc AS p"
            " WHERE p.pronamespace = to_regnamespace(%s) AND p.proname = ANY (%s)",
            [schema, [*HOT_PATH, *CUSTOM_PLAN_HELPERS]],
        ).fetchall()
    return {name: mode for name, mode in rows}


def test_the_hot_path_plans_once_a_session_on_the_node(citus_url: str, citus_hub: str) -> None:
    """Generic plans on the hot path, custom ones for the helpers holding an
    INSERT ... SELECT, on the coordinator and on the node alike."""
    expected = {
        **{name: "plan_cache_mode=force_generic_plan" for name in HOT_PATH},
        **{name: "plan_cache_mode=force_custom_plan" for name in CUSTOM_PLAN_HELPERS},
    }
    assert plan_modes(citus_url, citus_hub) == expected
    assert plan_modes(node_of(citus_url, citus_hub), citus_hub) == expected


def test_a_hub_distributed_before_0022_gets_generic_plans_back(citus_url: str) -> None:
    schema = new_schema_name("cit")
    migrate.upgrade(citus_url, schema, "0021", citus="schema")
    try:
        assert plan_modes(citus_url, schema)["ack_orchestration_item"] is None  # 0014's reset
        migrate.upgrade(citus_url, schema)
        assert plan_modes(citus_url, schema)["ack_orchestration_item"] == (
            "plan_cache_mode=force_generic_plan"
        )
        migrate.downgrade(citus_url, schema, "0021")
        assert plan_modes(citus_url, schema)["ack_orchestration_item"] is None
    finally:
        migrate.downgrade(citus_url, schema, "base")


def test_placement_names_the_node_and_a_url_that_reaches_it(
    citus_url: str, citus_hub: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["citus", "placement", "--url", citus_url, "--schema", citus_hub, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    host, port = placement(citus_url, citus_hub)
    assert (found["schema"], found["host"], found["port"]) == (citus_hub, host, port)
    with psycopg.connect(found["url"], autocommit=True) as conn:
        assert conn.execute("SELECT inet_server_port()").fetchone() == (port,)
        assert conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = to_regnamespace(%s)"
            " AND relname LIKE 'instances\\_%%'",
            [citus_hub],
        ).fetchone() == (1,), "the node holds the hub's shards"


def test_placement_of_a_hub_not_distributed_is_refused(
    citus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = new_schema_name("plain")
    migrate.upgrade(citus_url, schema)
    try:
        assert main(["citus", "placement", "--url", citus_url, "--schema", schema]) == 1
        assert "is not distributed on Citus" in capsys.readouterr().err
    finally:
        migrate.downgrade(citus_url, schema, "base")


def test_a_provider_with_citus_direct_calls_the_node(citus_url: str, citus_hub: str) -> None:
    _, port = placement(citus_url, citus_hub)
    with (
        TaskHub.connect(citus_url, citus_hub, citus_direct=True) as hub,
        psycopg.connect(node_of(citus_url, citus_hub), autocommit=True) as conn,
    ):
        with hub._pool.connection() as pooled:
            assert pooled.execute("SELECT inet_server_port()").fetchone() == (port,)
        exercise_the_contract(hub, conn, citus_hub)


def test_the_asyncio_provider_with_citus_direct_calls_the_node(
    citus_url: str, citus_hub: str
) -> None:
    _, port = placement(citus_url, citus_hub)

    async def use_it() -> None:
        async with AsyncTaskHub.connect(citus_url, citus_hub, citus_direct=True) as hub:
            async with hub._pool.connection() as pooled:
                cursor = await pooled.execute("SELECT inet_server_port()")
                assert await cursor.fetchone() == (port,)
            assert await hub.list_instances() == []

    asyncio.run(use_it())


@pytest.mark.parametrize("scenario", [scenarios.test_many_concurrent_instances_all_complete])
def test_the_duroxide_runtime_on_the_node_url(
    citus_url: str, citus_hub: str, scenario: Any
) -> None:
    url = node_of(citus_url, citus_hub)
    runtime, client = started_runtime(url, citus_hub)
    try:
        scenario(scenarios.RuntimeOnOurSchema(client, citus_hub, url))
    finally:
        runtime.shutdown(timeout_ms=2_000)


def test_a_migration_closes_the_call_gate_on_the_node_too(citus_url: str) -> None:
    """A call on the node holds the gate there (shared): a run that applies a
    revision cannot close it, fails after its attempts and changes nothing;
    without the node's gate it would have changed the functions under the call."""
    schema = new_schema_name("cit")
    migrate.upgrade(citus_url, schema, "0021", citus="schema")
    try:
        with psycopg.connect(node_of(citus_url, schema)) as call:
            call.execute(call_gate_statement(schema).replace("_lock(", "_lock_shared("))
            with pytest.raises(MigrationLocksNotTaken, match="call gate"):
                migrate.upgrade(citus_url, schema, lock_timeout_ms=100, lock_attempts=2)
        with psycopg.connect(citus_url, autocommit=True) as conn:
            revision = conn.execute(
                f'SELECT version_num FROM "{schema}".taskhub_pg_alembic_version'
            ).fetchone()
        assert revision == ("0021",)
        migrate.upgrade(citus_url, schema)  # the call is over: the run goes through
    finally:
        migrate.downgrade(citus_url, schema, "base")


def test_a_hub_moves_under_its_runtimes_and_fails_nothing(
    citus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runtimes, one through the coordinator and one on the node's URL,
    run orchestrations while `taskhub-pg citus move` takes the hub to the
    other worker: every orchestration completes with its output."""
    schema = new_schema_name("cit")
    migrate.upgrade(citus_url, schema, citus="schema")
    direct = node_of(citus_url, schema)
    here = Node(*placement(citus_url, schema))
    there = next(Node(h, p) for h, p in workers(citus_url) if Node(h, p) != here)
    runtimes = [started_runtime(citus_url, schema), started_runtime(direct, schema)]
    moved: dict[str, Any] = {}

    def move_soon() -> None:
        time.sleep(1.0)
        args = ["citus", "move", "--url", citus_url, "--schema", schema, "--to", str(there)]
        moved["exit"] = main([*args, "--yes", "--json"])

    try:
        instances = [f"mv-{n}" for n in range(40)]
        for n, instance in enumerate(instances):
            runtimes[n % 2][1].start_orchestration(instance, "SumOfSquares", 6)
        mover = threading.Thread(target=move_soon)
        mover.start()
        outputs = [scenarios.completed_output(runtimes[0][1], i) for i in instances]
        mover.join(120)
        assert moved == {"exit": 0}
        report = json.loads(capsys.readouterr().out)
        assert report["was"] == str(here) and report["now"] == str(there)
        assert Node(*placement(citus_url, schema)) == there
        assert outputs == [55] * len(instances)  # 0 + 1 + 4 + 9 + 16 + 25
        # Both keep serving after the move, the node's URL one hop longer.
        for n, (_, client) in enumerate(runtimes):
            client.start_orchestration(f"after-{n}", "SumOfSquares", 3)
            assert scenarios.completed_output(client, f"after-{n}") == 5
    finally:
        for runtime, _ in runtimes:
            runtime.shutdown(timeout_ms=2_000)
        migrate.downgrade(citus_url, schema, "base")


def test_move_refuses_an_unknown_worker_and_changes_nothing(
    citus_url: str, citus_hub: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = placement(citus_url, citus_hub)
    args = ["citus", "move", "--url", citus_url, "--schema", citus_hub, "--yes"]
    assert main([*args, "--to", "nowhere:1"]) == 1
    assert "is not a worker that can hold hubs" in capsys.readouterr().err
    assert main([*args, "--to", "nowhere"]) == 2
    assert placement(citus_url, citus_hub) == before


def test_the_ddl_guard_is_on_every_worker_under_the_runtime_on_the_node(citus_url: str) -> None:
    """A guarded runtime role on the hub's node: its calls work, its DDL
    there is refused as on the coordinator (an event trigger is a node's own)."""
    schema = new_schema_name("cit")
    with login_role(citus_url) as role:
        migrate.upgrade(
            citus_url, schema, runtime_role=role.name, runtime_ddl="guarded", citus="schema"
        )
        try:
            with psycopg.connect(citus_url, autocommit=True) as conn:
                row = conn.execute(f'SELECT "{schema}".taskhub_runtime_ddl_guard_name()').fetchone()
            assert row is not None
            for host, port in workers(citus_url):
                with psycopg.connect(node_url(citus_url, Node(host, port))) as conn:
                    found = conn.execute(
                        "SELECT count(*) FROM pg_event_trigger WHERE evtname = %s", [row[0]]
                    ).fetchone()
                    assert found == (1,), f"no guard on {host}:{port}"
            on_node = role.url_on(node_of(citus_url, schema))
            runtime, client = started_runtime(on_node, schema)
            try:
                client.start_orchestration("guarded", "SumOfSquares", 3)
                assert scenarios.completed_output(client, "guarded") == 5
            finally:
                runtime.shutdown(timeout_ms=2_000)
            with (
                psycopg.connect(on_node, autocommit=True) as conn,
                pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not run DDL"),
            ):
                conn.execute("CREATE TEMP TABLE mine (x int)")
        finally:
            with psycopg.connect(citus_url, autocommit=True) as conn:
                conn.execute(f'SELECT "{schema}".taskhub_revoke_runtime_role(%s)', [role.name])
            migrate.downgrade(citus_url, schema, "base")
