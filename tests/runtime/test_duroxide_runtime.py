"""The released duroxide 0.2.2 runtime, unchanged, on a schema our Alembic
migrations created: every feature it has, checked by its outcomes.

One runtime serves the whole module (it is slow to start and stop); every
test uses its own instance ids.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from provider import AsyncTaskHub, TaskHub
from provider.deploy import migrate, turn_form
from tests.support.db import new_schema_name

WAIT_MS = 30_000


@dataclass
class RuntimeOnOurSchema:
    client: Any
    schema: str
    url: str


def approve_when_waiting(client: Any, instance: str, event: str, data: Any) -> None:
    """Raise an event once the orchestration says (via custom status) it is listening."""
    client.wait_for_status_change(instance, 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    client.raise_event(instance, event, data)


def completed_output(client: Any, instance: str) -> Any:
    result = client.wait_for_orchestration(instance, WAIT_MS)
    assert result.status == "Completed", (instance, result.status, result.error)
    return result.output


def register(runtime: Any) -> None:
    flaky_calls: dict[str, int] = {}
    lock = threading.Lock()

    @runtime.register_activity("Square")
    def square(ctx: Any, value: int) -> int:
        return value * value

    @runtime.register_activity("Greet")
    def greet(ctx: Any, name: str) -> str:
        return f"Hello, {name}!"

    @runtime.register_activity("Flaky")
    def flaky(ctx: Any, key: str) -> str:
        with lock:
            flaky_calls[key] = flaky_calls.get(key, 0) + 1
            calls = flaky_calls[key]
        if calls < 3:
            raise RuntimeError(f"transient failure {calls}")
        return f"succeeded on call {calls}"

    @runtime.register_activity("WhichWorker")
    def which_worker(ctx: Any, _: int) -> str:
        return str(ctx.worker_id)

    @runtime.register_orchestration("SumOfSquares")
    def sum_of_squares(ctx: Any, count: int) -> Any:
        results = yield ctx.all([ctx.schedule_activity("Square", n) for n in range(count)])
        yield ctx.schedule_timer(50)
        return sum(result["ok"] for result in results)

    @runtime.register_orchestration("Greeter")
    def greeter(ctx: Any, name: str) -> Any:
        greeting = yield ctx.schedule_activity("Greet", name)
        return greeting

    @runtime.register_orchestration("AwaitApproval")
    def await_approval(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("waiting for approval")
        approval = yield ctx.wait_for_event("Approve")
        ctx.set_custom_status("approved")
        return approval

    @runtime.register_orchestration("Child")
    def child(ctx: Any, value: int) -> Any:
        squared = yield ctx.schedule_activity("Square", value)
        return squared

    @runtime.register_orchestration("Parent")
    def parent(ctx: Any, value: int) -> Any:
        first = yield ctx.schedule_sub_orchestration("Child", value)
        second = yield ctx.schedule_sub_orchestration("Child", value + 1)
        return [first, second]

    @runtime.register_orchestration("Counter")
    def counter(ctx: Any, n: int) -> Any:
        ctx.set_kv_value("count", str(n))
        if n < 3:
            yield ctx.continue_as_new(n + 1)
            return None
        yield ctx.schedule_timer(1)
        return n

    @runtime.register_orchestration("RetryFlaky")
    def retry_flaky(ctx: Any, key: str) -> Any:
        result = yield ctx.schedule_activity_with_retry("Flaky", key, {"max_attempts": 5})
        return result

    @runtime.register_orchestration("SessionAffinity")
    def session_affinity(ctx: Any, session: str) -> Any:
        workers = []
        for n in range(3):
            worker = yield ctx.schedule_activity_on_session("WhichWorker", n, session)
            workers.append(worker)
        return workers

    @runtime.register_orchestration("Mailbox")
    def mailbox(ctx: Any, _: Any) -> Any:
        first = yield ctx.dequeue_event("inbox")
        second = yield ctx.dequeue_event("inbox")
        return [first, second]

    @runtime.register_orchestration("KeyValues")
    def key_values(ctx: Any, _: Any) -> Any:
        ctx.set_kv_value("colour", "blue")
        ctx.set_kv_value("size", "large")
        ctx.clear_kv_value("size")
        yield ctx.schedule_timer(1)
        return ctx.get_kv_all_values()

    @runtime.register_orchestration("WaitForever")
    def wait_forever(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("waiting")
        value = yield ctx.wait_for_event("NeverSent")
        return value


@pytest.fixture(
    scope="module",
    params=["as_owner", "as_runtime_role", "as_runtime_role_without_ddl", "switched_to_json"],
)
def runtime(
    request: pytest.FixtureRequest, database_url: str, runtime_login: LoginRole
) -> Iterator[RuntimeOnOurSchema]:
    """The runtime logs in as the schema's owner (a new hub: its turns come as
    json), or as a least-privilege role that `runtime_role=` granted only what
    a runtime needs (behind the DDL guard, or with no CREATE at all: the mode
    every managed service allows); or as that role on a hub made before
    revision 0017 (jsonb), switched to json by the gated step."""
    schema = new_schema_name("rt")
    roles = ExitStack()
    if request.param == "as_owner":
        migrate.upgrade(database_url, schema)
        login_url = database_url
    elif request.param == "as_runtime_role":
        migrate.upgrade(database_url, schema, runtime_role=runtime_login.name)
        login_url = runtime_login.url
    elif request.param == "as_runtime_role_without_ddl":
        # A role of its own: the shared one holds CREATE from the guarded hubs.
        role = roles.enter_context(login_role(database_url, prefix="noddl"))
        migrate.upgrade(database_url, schema, runtime_role=role.name, runtime_ddl="none")
        login_url = role.url
    else:
        migrate.upgrade(database_url, schema, "0016", runtime_role=runtime_login.name)
        migrate.upgrade(database_url, schema)
        assert turn_form.switch(database_url, schema, "json").was == "jsonb"
        login_url = runtime_login.url
    provider = duroxide.PostgresProvider.connect_with_schema(login_url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(
            dispatcher_poll_interval_ms=10,
            orchestration_concurrency=4,
            worker_concurrency=4,
        ),
    )
    register(runtime)
    runtime.start()
    try:
        yield RuntimeOnOurSchema(duroxide.Client(provider), schema, database_url)
    finally:
        runtime.shutdown(timeout_ms=2_000)
        roles.close()


def test_connecting_finds_nothing_to_migrate(runtime: RuntimeOnOurSchema) -> None:
    with psycopg.connect(runtime.url) as conn:
        row = conn.execute(
            "SELECT pg_get_functiondef(%s::regprocedure)",
            [f'"{runtime.schema}".fetch_orchestration_item(bigint, bigint, bigint, bigint)'],
        ).fetchone()
    assert row is not None and "pg_try_advisory_xact_lock" in str(row[0])


def test_activity_returns_its_result(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("greet-1", "Greeter", "World")
    assert completed_output(runtime.client, "greet-1") == "Hello, World!"


def test_fan_out_fan_in_with_a_timer(runtime: RuntimeOnOurSchema) -> None:
    for n in range(5):
        runtime.client.start_orchestration(f"sum-{n}", "SumOfSquares", 5)
    for n in range(5):
        assert completed_output(runtime.client, f"sum-{n}") == 30


def test_external_event_reaches_the_waiting_orchestration(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("approve-1", "AwaitApproval", None)
    approve_when_waiting(runtime.client, "approve-1", "Approve", {"by": "ops"})
    assert completed_output(runtime.client, "approve-1") == {"by": "ops"}
    status = runtime.client.get_status("approve-1")
    assert status.custom_status == "approved"
    assert status.custom_status_version == 2


def test_sub_orchestrations_report_to_their_parent(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("parent-1", "Parent", 3)
    assert completed_output(runtime.client, "parent-1") == [9, 16]
    children = runtime.client.get_instance_tree("parent-1")
    assert len(children.all_ids) == 3


def test_continue_as_new_starts_new_executions_and_keeps_kv(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("counter-1", "Counter", 1)
    assert completed_output(runtime.client, "counter-1") == 3
    assert runtime.client.list_executions("counter-1") == [1, 2, 3]
    assert runtime.client.get_kv_value("counter-1", "count") == "3"


def test_activity_retries_until_it_succeeds(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("retry-1", "RetryFlaky", "retry-1")
    assert completed_output(runtime.client, "retry-1") == "succeeded on call 3"


def test_session_activities_run_on_one_worker(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("session-1", "SessionAffinity", "sess-a")
    workers = completed_output(runtime.client, "session-1")
    assert len(workers) == 3 and len(set(workers)) == 1


def test_event_queue_buffers_messages_in_order(runtime: RuntimeOnOurSchema) -> None:
    # Enqueued before the orchestration starts: the mailbox keeps them.
    runtime.client.start_orchestration("mailbox-1", "Mailbox", None)
    runtime.client.enqueue_event("mailbox-1", "inbox", "first")
    runtime.client.enqueue_event("mailbox-1", "inbox", "second")
    assert completed_output(runtime.client, "mailbox-1") == ["first", "second"]


def test_key_value_state_is_readable_by_clients(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("kv-1", "KeyValues", None)
    assert completed_output(runtime.client, "kv-1") == {"colour": "blue"}
    assert runtime.client.get_kv_value("kv-1", "colour") == "blue"
    assert runtime.client.get_kv_value("kv-1", "size") is None


def test_cancelling_an_instance_ends_it(runtime: RuntimeOnOurSchema) -> None:
    runtime.client.start_orchestration("cancel-1", "WaitForever", None)
    runtime.client.wait_for_status_change("cancel-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    runtime.client.cancel_instance("cancel-1", "no longer needed")
    result = runtime.client.wait_for_orchestration("cancel-1", WAIT_MS)
    assert result.status == "Failed"
    assert "no longer needed" in json.dumps(result.error)


def test_many_concurrent_instances_all_complete(runtime: RuntimeOnOurSchema) -> None:
    for n in range(60):
        runtime.client.start_orchestration(f"many-{n}", "Greeter", f"n{n}")
    for n in range(60):
        assert completed_output(runtime.client, f"many-{n}") == f"Hello, n{n}!"


def test_management_client_calls(runtime: RuntimeOnOurSchema) -> None:
    client = runtime.client
    client.start_orchestration("mgmt-1", "Greeter", "mgmt")
    completed_output(client, "mgmt-1")

    assert "mgmt-1" in client.list_all_instances()
    assert "mgmt-1" in client.list_instances_by_status("Completed")
    info = client.get_instance_info("mgmt-1")
    assert info.orchestration_name == "Greeter" and info.status == "Completed"
    execution = client.get_execution_info("mgmt-1", 1)
    assert execution.status == "Completed" and execution.event_count >= 4
    history = client.read_execution_history("mgmt-1", 1)
    assert len(history) == execution.event_count
    metrics = client.get_system_metrics()
    assert metrics.total_instances >= 1 and metrics.completed_instances >= 1
    depths = client.get_queue_depths()
    assert depths.orchestrator_queue >= 0 and depths.worker_queue >= 0
    stats = client.get_orchestration_stats("mgmt-1")
    assert stats is not None

    pruned = client.prune_executions("mgmt-1", duroxide.PruneOptions(keep_last=1))
    assert pruned.executions_deleted == 0
    deleted = client.delete_instance("mgmt-1")
    assert deleted.instances_deleted == 1
    assert "mgmt-1" not in client.list_all_instances()

    # The bulk calls are inline SQL in duroxide, not procedures.
    for n in (2, 3):
        client.start_orchestration(f"mgmt-{n}", "Greeter", "mgmt")
        completed_output(client, f"mgmt-{n}")
    only_these = duroxide.InstanceFilter(instance_ids=["mgmt-2", "mgmt-3"])
    bulk_pruned = client.prune_executions_bulk(only_these, duroxide.PruneOptions(keep_last=1))
    assert bulk_pruned.executions_deleted == 0
    bulk_deleted = client.delete_instance_bulk(only_these)
    assert bulk_deleted.instances_deleted == 2


def test_an_orchestration_started_in_the_callers_transaction_completes(
    runtime: RuntimeOnOurSchema,
) -> None:
    """The outbox: the start and later an event are written with the caller's
    own rows, in its transaction; the runtime sees each once it commits."""
    with (
        TaskHub.connect(runtime.url, runtime.schema) as hub,
        psycopg.connect(runtime.url) as conn,
    ):
        conn.execute("CREATE TEMP TABLE orders (id text)")
        conn.execute("INSERT INTO orders VALUES ('order-7')")
        hub.start_orchestration("outbox-1", "Greeter", "order-7", conn=conn)
        conn.commit()
        assert completed_output(runtime.client, "outbox-1") == "Hello, order-7!"

        runtime.client.start_orchestration("outbox-approve", "AwaitApproval", None)
        runtime.client.wait_for_status_change("outbox-approve", 0, 10, WAIT_MS)
        hub.raise_event("outbox-approve", "Approve", {"order": "order-7"}, conn=conn)
        conn.commit()
    assert completed_output(runtime.client, "outbox-approve") == {"order": "order-7"}


def test_an_orchestration_started_in_a_rolled_back_transaction_never_runs(
    runtime: RuntimeOnOurSchema,
) -> None:
    async def start_and_roll_back() -> None:
        async with (
            AsyncTaskHub.connect(runtime.url, runtime.schema) as hub,
            await psycopg.AsyncConnection.connect(runtime.url) as conn,
        ):
            await hub.start_orchestration("outbox-2", "Greeter", "nobody", conn=conn)
            await conn.rollback()
        # The same start, committed, on the pool: the runtime runs that one.
        async with AsyncTaskHub.connect(runtime.url, runtime.schema) as hub:
            await hub.start_orchestration("outbox-3", "Greeter", "somebody")

    asyncio.run(start_and_roll_back())
    assert completed_output(runtime.client, "outbox-3") == "Hello, somebody!"
    assert runtime.client.get_status("outbox-2").status == "NotFound"
