"""The application client (Client, AsyncClient): a start is made once, a
repeat that differs is refused, and cancel and raise_event refuse unknown
and ended instances as the CLI does. Each refusal is also run against what
issue 40 found (TaskHub's calls, a hub before revision 0025), where it fails."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.roles import LoginRole
from devkit.workloads.work_items import event, metadata, orchestration_started
from provider import (
    AsyncClient,
    Client,
    ConfigurationError,
    InstanceEnded,
    InstanceFailed,
    InstanceNotEnded,
    InstanceNotFound,
    InvalidInput,
    StartConflict,
    StartRequest,
    StartResult,
    TaskHub,
    WaitTimeout,
)
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.failed_instance import failed_order

ClientFactory = Callable[..., Client]


@pytest.fixture
def make_client(database_url: str) -> Iterator[ClientFactory]:
    clients: list[Client] = []

    def factory(schema: str, url: str | None = None) -> Client:
        client = Client.connect(url or database_url, schema, statement_timeout_ms=5_000)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


@pytest.fixture
def client(hub_schema: str, make_client: ClientFactory) -> Client:
    return make_client(hub_schema)


def queued(sql: psycopg.Connection[Any], schema: str, instance: str) -> list[str]:
    rows = sql.execute(
        f'SELECT work_item FROM "{schema}".orchestrator_queue WHERE instance_id = %s ORDER BY id',
        [instance],
    ).fetchall()
    return [row[0] for row in rows]


def completed(hub: TaskHub, instance: str, output: str) -> None:
    """The instance's start taken and its orchestration completed with
    `output`, as the runtime does it (the start's input in OrchestrationStarted)."""
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == instance
    start = item.messages[0]["StartOrchestration"]
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[
            {**orchestration_started(instance, "Order"), "input": start["input"]},
            event(2, instance, "OrchestrationCompleted", output=output),
        ],
        metadata=metadata("Order", status="Completed", output=output),
    )


# -- start: once, and a repeat that differs refused ---------------------------


def test_a_start_repeated_three_times_leaves_one_start_message(
    client: Client, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    results = [client.start("order-1", "Order", {"sku": "A-1"}) for _ in range(3)]
    assert [r.started for r in results] == [True, False, False]
    assert results[1].already_existed
    assert len(queued(sql, hub_schema, "order-1")) == 1


def test_the_defect_a_start_repeated_on_a_hub_before_0025_queues_three(
    database_url: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    """What issue 40 found (on the head it was filed against, TaskHub queued
    every repeat): shown on a hub of that time, where the count is 3, not 1."""
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0024")
    hub = make_hub(schema)
    for _ in range(3):
        hub.start_orchestration("order-1", "Order", {"sku": "A-1"})
    assert len(queued(sql, schema, "order-1")) == 3


@pytest.mark.parametrize(
    ("orchestration", "input", "version", "differs"),
    [
        ("Refund", {"sku": "A-1"}, None, "orchestration Order, not Refund"),
        ("Order", {"sku": "B-2"}, None, "another input"),
        ("Order", {"sku": "A-1"}, "2.0.0", "version 1.0.0, not 2.0.0"),
    ],
)
def test_a_repeat_with_another_orchestration_input_or_version_is_refused(
    client: Client,
    hub_schema: str,
    sql: psycopg.Connection[Any],
    orchestration: str,
    input: Any,
    version: str | None,
    differs: str,
) -> None:
    client.start("order-2", "Order", {"sku": "A-1"}, version="1.0.0")
    with pytest.raises(StartConflict) as refused:
        client.start("order-2", orchestration, input, version=version)
    assert differs in str(refused.value)
    assert refused.value.sqlstate == "23505"
    assert len(queued(sql, hub_schema, "order-2")) == 1


def test_inputs_are_compared_as_json_values_and_the_instance_once_started(
    client: Client, hub_schema: str, make_hub: Callable[..., TaskHub]
) -> None:
    hub = make_hub(hub_schema)
    assert client.start("order-3", "Order", {"a": 1, "b": [1, 2]}).started
    # The runtime takes the start: the instance exists, its input is in history.
    completed(hub, "order-3", '"done"')
    hub_input = {"b": [1, 2], "a": 1}
    assert client.start("order-3", "Order", hub_input).started is False


def test_a_start_in_the_callers_transaction_commits_or_rolls_back_with_it(
    client: Client, database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with psycopg.connect(database_url) as conn:
        assert client.start("outbox-1", "Order", 1, conn=conn).started
        conn.rollback()
    assert queued(sql, hub_schema, "outbox-1") == []
    with psycopg.connect(database_url) as conn:
        assert client.start("outbox-1", "Order", 1, conn=conn).started
    assert client.start("outbox-1", "Order", 1).started is False


def test_start_many_starts_all_or_none(
    client: Client, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    client.start("many-0", "Order", 0)
    results = client.start_many(StartRequest(f"many-{n}", "Order", n) for n in range(4))
    assert results == [
        StartResult("many-0", False),
        StartResult("many-1", True),
        StartResult("many-2", True),
        StartResult("many-3", True),
    ]
    # One start in the batch conflicts: none of it is written.
    with pytest.raises(StartConflict):
        client.start_many([StartRequest("many-4", "Order", 4), StartRequest("many-1", "Order", 9)])
    assert queued(sql, hub_schema, "many-4") == []
    # The same id twice in one batch: the second is the first's repeat.
    twice = client.start_many([StartRequest("many-5", "Order", 5)] * 2)
    assert [r.started for r in twice] == [True, False]
    assert client.start_many([]) == []


def test_bad_starts_are_refused_before_any_sql(client: Client) -> None:
    with pytest.raises(InvalidInput):
        client.start("", "Order")
    with pytest.raises(InvalidInput):
        client.start_many([StartRequest("ok", "Order"), "not a request"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        client.start("bad-input", "Order", {1, 2})


# -- status, waiting and output -----------------------------------------------


def test_status_output_and_waiting(
    client: Client, hub_schema: str, make_hub: Callable[..., TaskHub]
) -> None:
    hub = make_hub(hub_schema)
    with pytest.raises(InstanceNotFound):
        client.get_status("nosuch")
    client.start("wait-1", "Order", None)
    assert client.get_status("wait-1").status == "Pending"
    with pytest.raises(InstanceNotEnded):
        client.get_output("wait-1")
    with pytest.raises(WaitTimeout):
        client.wait_for_completion("wait-1", timeout_s=0.1)
    completed(hub, "wait-1", '{"total": 12}')
    done = client.wait_for_completion("wait-1", timeout_s=5)
    assert (done.status, done.ended, done.orchestration_name) == ("Completed", True, "Order")
    assert client.get_output("wait-1") == {"total": 12}


def test_the_output_of_a_failed_instance_is_its_error(
    client: Client, hub_schema: str, make_hub: Callable[..., TaskHub]
) -> None:
    failed_order(make_hub(hub_schema), "failed-1")
    with pytest.raises(InstanceFailed) as failure:
        client.get_output("failed-1")
    assert failure.value.error is not None and "card declined" in failure.value.error
    assert client.wait_for_completion("failed-1", timeout_s=1).status == "Failed"


def test_find_filters_by_status(client: Client) -> None:
    client.start("find-1", "Order")
    assert [s.instance_id for s in client.find(status="Pending")] == ["find-1"]
    assert client.find(status="Completed") == []


def test_find_by_id_prefix_and_a_part_of_the_name(client: Client) -> None:
    client.start_many(
        [
            StartRequest("shop:order-1", "ProcessOrder"),
            StartRequest("shop:order-2", "ProcessOrder"),
            StartRequest("shop:refund-1", "Refund"),
        ]
    )

    def ids(**filters: Any) -> list[str]:
        return sorted(s.instance_id for s in client.find(**filters))

    assert ids(id_prefix="shop:order") == ["shop:order-1", "shop:order-2"]
    assert ids(name_contains="process") == ["shop:order-1", "shop:order-2"]
    assert ids(id_prefix="shop:", name_contains="FUND") == ["shop:refund-1"]
    assert ids(id_prefix="shop:", status="Completed") == []


def test_a_search_on_a_hub_before_revision_0028_says_to_upgrade(
    database_url: str, make_client: ClientFactory
) -> None:
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0027")
    client = make_client(schema)
    assert client.find(status="Pending") == []  # the filters every hub has
    with pytest.raises(ConfigurationError, match="older than revision 0028"):
        client.find(id_prefix="order-")


# -- cancel and raise_event refuse unknown and ended instances ----------------


class TaskHubAsClient:
    """The calls issue 40 found loose (TaskHub's cancel_instance and
    raise_event), behind the client's names: the same tests fail on them."""

    def __init__(self, hub: TaskHub) -> None:
        self.hub = hub

    def cancel(self, instance_id: str, reason: str = "") -> None:
        self.hub.cancel_instance(instance_id, reason)

    def raise_event(self, instance_id: str, name: str, data: Any = None) -> None:
        self.hub.raise_event(instance_id, name, data)


FACES = [
    "client",
    pytest.param(
        "taskhub",
        marks=pytest.mark.xfail(
            strict=True, reason="issue 40: TaskHub queues a message for any instance id"
        ),
    ),
]


@pytest.fixture
def face(request: pytest.FixtureRequest, client: Client, hub_schema: str, make_hub: Any) -> Any:
    return client if request.param == "client" else TaskHubAsClient(make_hub(hub_schema))


@pytest.mark.parametrize("face", FACES, indirect=True)
def test_cancel_and_raise_event_refuse_an_unknown_instance(
    face: Any, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with pytest.raises(InstanceNotFound, match="instance nosuch not found"):
        face.cancel("nosuch")
    with pytest.raises(InstanceNotFound):
        face.raise_event("nosuch", "Approved", True)
    assert queued(sql, hub_schema, "nosuch") == []


@pytest.mark.parametrize("face", FACES, indirect=True)
def test_cancel_and_raise_event_refuse_an_ended_instance(
    face: Any, hub_schema: str, make_hub: Callable[..., TaskHub], sql: psycopg.Connection[Any]
) -> None:
    failed_order(make_hub(hub_schema), "ended-1")
    with pytest.raises(InstanceEnded, match="already ended"):
        face.cancel("ended-1")
    with pytest.raises(InstanceEnded):
        face.raise_event("ended-1", "Approved", True)
    assert queued(sql, hub_schema, "ended-1") == []


def test_cancel_and_raise_event_reach_a_pending_instance(
    client: Client, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    client.start("live-1", "Order")
    client.raise_event("live-1", "Approved", {"by": "ops"})
    client.cancel("live-1", "no longer needed")
    kinds = [item.split('"', 2)[1] for item in queued(sql, hub_schema, "live-1")]
    assert kinds == ["StartOrchestration", "ExternalRaised", "CancelInstance"]


# -- roles, old hubs, the asyncio face ----------------------------------------


def test_the_runtime_role_may_use_every_call(
    database_url: str, runtime_login: LoginRole, make_client: ClientFactory
) -> None:
    schema = new_schema_name("app")
    migrate.upgrade(database_url, schema, runtime_role=runtime_login.name)
    client = make_client(schema, runtime_login.url)
    assert client.start("role-1", "Order").started
    assert client.start_many([StartRequest("role-2", "Order")])[0].started
    assert client.get_status("role-1").status == "Pending"
    client.raise_event("role-1", "Approved")
    client.cancel("role-1")
    with pytest.raises(InstanceNotFound):
        client.cancel("nosuch")


def test_a_hub_before_revision_0027_says_to_upgrade(
    database_url: str, make_client: ClientFactory
) -> None:
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0026")
    with pytest.raises(ConfigurationError, match="older than revision 0027"):
        make_client(schema).start("old-1", "Order")


def test_the_async_face_says_the_same(database_url: str, hub_schema: str) -> None:
    async def scenario() -> list[Any]:
        async with AsyncClient.connect(database_url, hub_schema) as client:
            first = await client.start("async-1", "Order", 1)
            again = await client.start("async-1", "Order", 1)
            many = await client.start_many([StartRequest("async-2", "Order")])
            status = await client.get_status("async-1")
            with pytest.raises(StartConflict):
                await client.start("async-1", "Order", 2)
            with pytest.raises(InstanceNotFound):
                await client.cancel("nosuch")
            with pytest.raises(WaitTimeout):
                await client.wait_for_completion("async-1", timeout_s=0.05)
            return [first.started, again.started, many[0].started, status.status]

    assert asyncio.run(scenario()) == [True, False, True, "Pending"]
