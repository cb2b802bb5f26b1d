"""The API fails fast and precisely, against a real server (issue 22, item 5):
a hub that cannot connect raises ConfigurationError when it is opened; a bad
start or event in the caller's transaction (the outbox) is refused before any
SQL, so the caller's own writes survive and commit; and every error names the
public call, not the procedures it made."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from provider import (
    AsyncTaskHub,
    ConfigurationError,
    InvalidInput,
    LockLost,
    PermanentError,
    TaskHub,
    TaskHubConfig,
    TaskHubError,
)
from provider.testing.embedded_pg import free_port
from tests.support.db import orchestrator_items
from tests.unit.test_api_errors import BAD_EVENTS, BAD_STARTS, event_arguments, start_arguments

HubFactory = Callable[..., TaskHub]
SECRET = "s3cret-pw"


def with_netloc(url: str, *, user: str, database: str) -> str:
    """`url` as `user` (password SECRET) on another database of the same server."""
    parts = urlsplit(url)
    server = parts.netloc.rsplit("@", 1)[-1]  # with any `host=` (a socket) in the query
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{server}", path=f"/{database}"))


def elsewhere(*, user: str, host: str, port: int, database: str) -> str:
    """A URL of another server, as `user` (password SECRET)."""
    return f"postgresql://{user}:{SECRET}@{host}:{port}/{database}"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])


def unusable_urls(database_url: str) -> dict[str, str]:
    here = urlsplit(database_url)
    port, user = here.port or 5432, here.username or "postgres"
    database = here.path.lstrip("/")
    return {
        "unknown host": elsewhere(
            user=user, host="no-such-host.invalid", port=port, database=database
        ),
        "nobody listening": elsewhere(
            user=user, host="127.0.0.1", port=free_port(), database=database
        ),
        "missing database": with_netloc(database_url, user=user, database="no_such_database"),
        # The test cluster trusts every login (on its private socket): a role
        # it does not know is the refused login it can show (a wrong password
        # fails the same way).
        "unknown login": with_netloc(database_url, user="no_such_role", database=database),
    }


PROBLEMS = {
    "unknown host": "no-such-host.invalid",
    "nobody listening": "Connection refused",
    "missing database": 'database "no_such_database" does not exist',
    "unknown login": 'role "no_such_role" does not exist',
}


@pytest.mark.parametrize("case", PROBLEMS)
def test_a_hub_that_cannot_connect_raises_a_configuration_error_at_once(
    case: str, database_url: str
) -> None:
    url = unusable_urls(database_url)[case]
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as refused:
        TaskHub.connect(url)
    assert time.monotonic() - started < 5  # not pool_timeout_s per call, as before
    message = str(refused.value)
    assert message.startswith("TaskHub.connect: cannot connect to ")
    assert PROBLEMS[case] in message
    assert SECRET not in message and "://***@" in message
    assert not refused.value.retryable


def test_the_asyncio_hub_raises_it_when_it_opens(database_url: str) -> None:
    url = unusable_urls(database_url)["missing database"]

    async def open_it() -> None:
        async with AsyncTaskHub.connect(url):
            pass

    with pytest.raises(ConfigurationError) as refused:
        asyncio.run(open_it())
    assert str(refused.value).startswith("AsyncTaskHub.open: cannot connect to ")
    assert 'database "no_such_database" does not exist' in str(refused.value)
    assert SECRET not in str(refused.value)


def test_a_server_that_never_answers_fails_after_connect_timeout_s(silent_server: int) -> None:
    url = f"postgresql://app:{SECRET}@127.0.0.1:{silent_server}/app"
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match="no answer within 2 s from") as refused:
        TaskHub.connect(url, connect_timeout_s=1)  # libpq waits 2 s at least
    assert 1.5 < time.monotonic() - started < 5
    assert SECRET not in str(refused.value)


def test_a_lazy_hub_connects_only_when_opened(database_url: str, hub_schema: str) -> None:
    nobody = TaskHubConfig(url=f"postgresql://app@127.0.0.1:{free_port()}/app")
    TaskHub(nobody, open_pool=False).close()  # made at once, although nothing listens there
    hub = TaskHub(TaskHubConfig(url=database_url, schema=hub_schema), open_pool=False)
    try:
        hub.open()
        assert hub.list_instances() == []
    finally:
        hub.close()


def test_citus_direct_without_citus_reaches_the_hub_at_the_url_given(
    database_url: str, hub_schema: str
) -> None:
    """Plain PostgreSQL: nothing to look up, the URL as it is (both faces)."""
    with TaskHub.connect(database_url, hub_schema, citus_direct=True) as hub:
        assert hub._pool.conninfo == database_url
        assert hub.list_instances() == []

    async def open_it() -> None:
        async with AsyncTaskHub.connect(database_url, hub_schema, citus_direct=True) as hub:
            assert hub._pool.conninfo == database_url
            assert await hub.list_instances() == []

    asyncio.run(open_it())


# -- the outbox: bad arguments never abort the caller's transaction ------------


@pytest.fixture
def orders(hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    """The caller's own table, next to the hub."""
    sql.execute(f'CREATE TABLE "{hub_schema}".orders (id text PRIMARY KEY)')
    return f'"{hub_schema}".orders'


def committed_orders(sql: psycopg.Connection[Any], orders: str) -> list[str]:
    return [str(row[0]) for row in sql.execute(f"SELECT id FROM {orders} ORDER BY id")]


def queued_instances(sql: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = sql.execute(f'SELECT instance_id FROM "{schema}".orchestrator_queue ORDER BY id')
    return [str(row[0]) for row in rows]


@pytest.mark.parametrize("bad", BAD_STARTS.values(), ids=BAD_STARTS.keys())
def test_a_bad_start_in_the_callers_transaction_leaves_their_writes_to_commit(
    bad: dict[str, Any],
    hub: TaskHub,
    orders: str,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(f"INSERT INTO {orders} VALUES ('order-1')")
        with pytest.raises(InvalidInput, match=r"^start_orchestration: "):
            hub.start_orchestration(**start_arguments(**bad), conn=conn)
        assert conn.info.transaction_status == TransactionStatus.INTRANS  # not aborted
        hub.start_orchestration("order-1", "Order", {"id": 1}, conn=conn)
        conn.commit()
    assert committed_orders(sql, orders) == ["order-1"]
    assert queued_instances(sql, hub.config.schema) == ["order-1"]


@pytest.mark.parametrize("bad", BAD_EVENTS.values(), ids=BAD_EVENTS.keys())
def test_a_bad_event_in_the_callers_transaction_leaves_their_writes_to_commit(
    bad: dict[str, Any],
    hub: TaskHub,
    orders: str,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute(f"INSERT INTO {orders} VALUES ('order-1')")
        with pytest.raises(InvalidInput, match=r"^raise_event: "):
            hub.raise_event(**event_arguments(**bad), conn=conn)
        hub.raise_event("order-1", "Paid", True, conn=conn)
        conn.commit()
    assert committed_orders(sql, orders) == ["order-1"]
    assert queued_instances(sql, hub.config.schema) == ["order-1"]


def test_the_asyncio_outbox_keeps_the_callers_writes_too(
    database_url: str, hub_schema: str, orders: str, sql: psycopg.Connection[Any]
) -> None:
    async def write() -> None:
        async with (
            AsyncTaskHub.connect(database_url, hub_schema) as hub,
            await psycopg.AsyncConnection.connect(database_url) as conn,
            conn.transaction(),
        ):
            await conn.execute(f"INSERT INTO {orders} VALUES ('order-2')")
            with pytest.raises(InvalidInput, match=r"^start_orchestration: instance_id"):
                await hub.start_orchestration("", "Order", None, conn=conn)
            with pytest.raises(InvalidInput, match=r"^raise_event: data is not JSON"):
                await hub.raise_event("order-2", "Paid", {1, 2}, conn=conn)
            await hub.start_orchestration("order-2", "Order", None, conn=conn)

    asyncio.run(write())
    assert committed_orders(sql, orders) == ["order-2"]
    assert queued_instances(sql, hub_schema) == ["order-2"]


def test_limits_are_the_procedures_own_so_valid_edge_values_are_stored(
    hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    longest = "é" * 512  # 1024 bytes: the longest instance id the procedures store
    hub.start_orchestration(longest, "Order", "a NUL \x00 in the input is only text")
    hub.raise_event(longest, "Paid", {"text": "\x00"})
    start, event = orchestrator_items(sql, hub.config.schema)
    assert json.loads(start["StartOrchestration"]["input"]) == (
        "a NUL \x00 in the input is only text"
    )
    assert json.loads(event["ExternalRaised"]["data"]) == {"text": "\x00"}
    assert queued_instances(sql, hub.config.schema) == [longest, longest]


# -- errors name the call the caller made ---------------------------------------

# (the public call, what it is refused for): each made internal calls whose
# names its errors used to carry (get_parent_id, ack_worker, taskhub_renew_...).
REFUSED_CALLS: dict[str, tuple[type[TaskHubError], Callable[[TaskHub], Any]]] = {
    "delete_instance": (PermanentError, lambda hub: hub.delete_instance("nosuch")),
    "latest_execution_id": (PermanentError, lambda hub: hub.latest_execution_id("nosuch")),
    "prune_executions": (PermanentError, lambda hub: hub.prune_executions("nosuch")),
    "get_instance_info": (PermanentError, lambda hub: hub.get_instance_info("nosuch")),
    "renew_orchestration_item_lock": (
        LockLost,
        lambda hub: hub.renew_orchestration_item_lock("lock_nosuch", 1_000),
    ),
    "renew_work_item_lock": (LockLost, lambda hub: hub.renew_work_item_lock("lock_nosuch", 1_000)),
    "renew_session_lease": (LockLost, lambda hub: hub.renew_session_lease("s", "owner", 1_000)),
    "ack_work_item": (LockLost, lambda hub: hub.ack_work_item("lock_nosuch")),
    "abandon_work_item": (LockLost, lambda hub: hub.abandon_work_item("lock_nosuch")),
    "ack_orchestration_item": (LockLost, lambda hub: hub.ack_orchestration_item("lock_x", 1)),
    "enqueue_for_orchestrator": (
        PermanentError,
        lambda hub: hub.enqueue_for_orchestrator(
            {"ExternalRaised": {"instance": "x" * 2_000, "name": "e", "data": "null"}}
        ),
    ),
    "fetch_work_item": (PermanentError, lambda hub: hub.fetch_work_item(-1)),
}


@pytest.mark.parametrize(("call", "case"), REFUSED_CALLS.items(), ids=REFUSED_CALLS.keys())
def test_an_error_names_the_public_call_not_the_procedure(
    call: str, case: tuple[type[TaskHubError], Callable[[TaskHub], Any]], hub: TaskHub
) -> None:
    kind, make = case
    with pytest.raises(kind) as refused:
        make(hub)
    assert refused.value.operation == call
    assert str(refused.value).startswith(f"{call}: ")


def test_delete_instance_of_an_unknown_instance_says_so(hub: TaskHub) -> None:
    with pytest.raises(PermanentError) as refused:
        hub.delete_instance("nosuch")
    assert str(refused.value) == "delete_instance: Instance not found: nosuch"
    assert refused.value.sqlstate == "P0002"
    # The procedure's own error stays behind it, for whoever debugs.
    assert isinstance(refused.value.__cause__, psycopg.Error)


def test_the_asyncio_face_names_the_same_calls(database_url: str, hub_schema: str) -> None:
    async def refused() -> list[str]:
        messages = []
        async with AsyncTaskHub.connect(database_url, hub_schema) as hub:
            for call in (
                hub.delete_instance("nosuch"),
                hub.renew_work_item_lock("lock_nosuch", 1_000),
            ):
                with pytest.raises(TaskHubError) as error:
                    await call
                messages.append(str(error.value))
        return messages

    deleted, renewed = asyncio.run(refused())
    assert deleted == "delete_instance: Instance not found: nosuch"
    assert renewed.startswith("renew_work_item_lock: ")
