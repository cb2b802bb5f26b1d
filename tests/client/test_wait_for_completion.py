"""Client.wait_for_completion listens to the hub's wakeups
(provider/client/completion_wait.py): an instance that waits for its
activity is read again when the activity's completion is queued (ack_worker
notifies the channel), and its last turn is then seen within a few reads,
where a polling wait reads it again and again all along. Where no LISTEN
can work (a transaction pooler, no listen_url) it polls; when the listening
connection dies it polls until the listener is back.

The runtime's part is played with TaskHub's calls, as the duroxide runtime
makes them. Each wait's status reads are counted twice: live, by a call
observer on the wait's thread, and afterwards as the events of its span."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from devkit.roles import operator_of
from devkit.waiting import wait_until, wait_until_async
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    event,
    metadata,
    orchestration_started,
)
from provider import AsyncClient, Client, InstanceStatus, TaskHub, TaskHubError, WaitTimeout
from provider.client.call_observers import add_call_observer, remove_call_observer
from provider.client.completion_wait import IDLE_CHECK_S
from tests.support.tracing_sdk import provider_traced_by_sdk

ClientFactory = Callable[..., Client]
STATUS_READ = "taskhub_find_instances"  # the call each status read makes


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with provider_traced_by_sdk() as (_, exporter):
        yield exporter


@pytest.fixture
def make_client(database_url: str, hub_schema: str) -> Iterator[ClientFactory]:
    clients: list[Client] = []

    def factory(**settings: Any) -> Client:
        client = Client.connect(database_url, hub_schema, statement_timeout_ms=5_000, **settings)
        clients.append(client)
        return client

    yield factory
    for client in clients:
        client.close()


# -- the runtime's part ---------------------------------------------------------


def waiting_for_its_activity(hub: TaskHub, client: Client, instance: str) -> None:
    """Started, and its first turn taken: it schedules Charge and waits, with
    nothing queued for it."""
    client.start(instance, "Order")
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == instance
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[
            orchestration_started(instance, "Order"),
            event(2, instance, "ActivityScheduled", name="Charge", input="{}"),
        ],
        worker_items=[activity_execute(instance, 2, name="Charge")],
        metadata=metadata("Order", status="Running"),
    )


def activity_done(hub: TaskHub, instance: str) -> None:
    """The worker acks Charge: its completion is queued for the orchestration,
    which notifies the hub's channel (a listener waits)."""
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    hub.ack_work_item(lease.lock_token, activity_completed(instance, 2))


def last_turns(hub: TaskHub, count: int) -> None:
    """The runtime's last turns of `count` instances, in the order it fetches
    them: each completes its instance (after its activity, or at its start).
    These acks queue nothing and notify nobody."""
    for _ in range(count):
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        instance = item.instance_id
        if "StartOrchestration" in item.messages[0]:
            history, last_id = [orchestration_started(instance, "Order")], 2
        else:
            history, last_id = [event(3, instance, "ActivityCompleted", result='"ok"')], 4
        ending = event(last_id, instance, "OrchestrationCompleted", output='"done"')
        hub.ack_orchestration_item(
            item.lock_token,
            1,
            history_delta=[*history, ending],
            metadata=metadata("Order", status="Completed", output='"done"'),
        )


# -- watching a wait --------------------------------------------------------------


class WaitOnAThread:
    """wait_for_completion on a thread of its own, and its status reads so far
    (a call observer: each read is one call of taskhub_find_instances)."""

    def __init__(self, client: Client, instance: str, timeout_s: float = 30.0) -> None:
        self.client, self.instance, self.timeout_s = client, instance, timeout_s
        self.reads = 0
        self.result: InstanceStatus | TaskHubError | None = None
        self._thread = threading.Thread(target=self._run, name=f"wait {instance}")

    def __enter__(self) -> WaitOnAThread:
        add_call_observer(self._observe)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._thread.join(timeout=self.timeout_s + 5)
        remove_call_observer(self._observe)

    def done(self) -> InstanceStatus:
        self._thread.join(timeout=self.timeout_s + 5)
        assert isinstance(self.result, InstanceStatus), self.result
        return self.result

    def _run(self) -> None:
        try:
            self.result = self.client.wait_for_completion(self.instance, self.timeout_s)
        except TaskHubError as error:
            self.result = error

    def _observe(self, schema: str, operation: str, *_: object) -> None:
        if operation == STATUS_READ and threading.current_thread() is self._thread:
            self.reads += 1


def wait_span(exporter: InMemorySpanExporter, instance: str) -> ReadableSpan:
    found = [
        s
        for s in exporter.get_finished_spans()
        if s.name == "wait_for_completion"
        and s.attributes is not None
        and s.attributes["taskhub.instance_id"] == instance
    ]
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def reads_of(span: ReadableSpan) -> list[dict[str, Any]]:
    """Each status read of the wait: what it found, whether it listened."""
    return [dict(e.attributes or {}) for e in span.events if e.name == "status read"]


def wakeups_of(span: ReadableSpan) -> int:
    return sum(1 for e in span.events if e.name == "wakeup")


def waiting_listeners(sql: psycopg.Connection[Any], schema: str) -> list[int]:
    """The pids of the 'orchestrator' listeners the hub will notify."""
    rows = sql.execute(
        f'SELECT pid FROM "{schema}".taskhub_wakeup_listeners'
        " WHERE queue = 'orchestrator' AND waiting"
    ).fetchall()
    return [int(pid) for (pid,) in rows]


def listeners(sql: psycopg.Connection[Any], schema: str) -> list[int]:
    """The listeners' connections still open (a closed one's row stays until
    the next listener registers: taskhub_listen removes it)."""
    rows = sql.execute(
        f'SELECT l.pid FROM "{schema}".taskhub_wakeup_listeners AS l'
        " JOIN pg_stat_activity AS a ON a.pid = l.pid"
    ).fetchall()
    return [int(pid) for (pid,) in rows]


# -- the tests ----------------------------------------------------------------------


def test_a_wait_that_listens_reads_a_handful_of_times_where_polling_reads_many(
    spans: InMemorySpanExporter,
    make_client: ClientFactory,
    hub: TaskHub,
    hub_schema: str,
    sql: psycopg.Connection[Any],
) -> None:
    """Two waits side by side over the same stretch of time: one listens (the
    server directly), one cannot (pooler='transaction' without listen_url:
    it polls). The test ends both instances once the polling wait has
    reached its one-second reads; the listening one has read twice by then."""
    listening, polling = make_client(), make_client(pooler="transaction")
    waiting_for_its_activity(hub, listening, "heard-1")
    polling.start("polled-1", "Order")  # Pending: no runtime takes it until the end
    began = time.monotonic()
    with WaitOnAThread(listening, "heard-1") as heard, WaitOnAThread(polling, "polled-1") as polled:
        wait_until(lambda: waiting_listeners(sql, hub_schema), message="the wait to listen")
        wait_until(lambda: polled.reads >= 8, message="the polling wait's eighth read")
        reads_while_idle = heard.reads
        # On a loaded machine the polling wait's eight reads can outlast the
        # listening wait's safety read (IDLE_CHECK_S): one more read each time.
        safety_reads = int((time.monotonic() - began) // IDLE_CHECK_S)
        activity_done(hub, "heard-1")  # the wakeup
        last_turns(hub, 2)  # notify nobody: heard-1's is seen on the ramp that follows
        assert heard.done().status == "Completed"
        assert polled.done().status == "Completed"

    # The first, one more if the listener was connecting, and one more if it
    # connected between the wait's first read and its pause (seen under load):
    # a handful, where the polling wait read 8 times over the same stretch.
    assert reads_while_idle <= 3 + safety_reads, (reads_while_idle, safety_reads)
    assert heard.reads <= 6 + safety_reads, heard.reads
    assert polled.reads >= 9, polled.reads
    # The span of each wait tells the same, read by read.
    heard_span, polled_span = wait_span(spans, "heard-1"), wait_span(spans, "polled-1")
    assert len(reads_of(heard_span)) == heard.reads
    assert len(reads_of(polled_span)) == polled.reads
    assert wakeups_of(heard_span) >= 1
    assert reads_of(heard_span)[-1]["taskhub.listening"] is True
    assert {r["taskhub.listening"] for r in reads_of(polled_span)} == {False}
    assert wakeups_of(polled_span) == 0


def test_behind_a_transaction_pooler_without_listen_url_it_polls(
    spans: InMemorySpanExporter,
    make_client: ClientFactory,
    hub: TaskHub,
    hub_schema: str,
    sql: psycopg.Connection[Any],
) -> None:
    client = make_client(pooler="transaction")
    waiting_for_its_activity(hub, client, "polled-2")
    with WaitOnAThread(client, "polled-2") as wait:
        wait_until(lambda: wait.reads >= 3, message="three reads of the polling wait")
        activity_done(hub, "polled-2")
        last_turns(hub, 1)
        assert wait.done().status == "Completed"
    assert listeners(sql, hub_schema) == []  # it never listened
    span = wait_span(spans, "polled-2")
    assert {r["taskhub.listening"] for r in reads_of(span)} == {False}
    assert reads_of(span)[-1]["taskhub.status"] == "Completed"


def test_a_wait_whose_listening_connection_dies_polls_then_listens_again(
    spans: InMemorySpanExporter,
    make_client: ClientFactory,
    hub: TaskHub,
    hub_schema: str,
    sql: psycopg.Connection[Any],
) -> None:
    client = make_client()
    waiting_for_its_activity(hub, client, "lost-1")
    with WaitOnAThread(client, "lost-1") as wait:
        (first,) = wait_until(lambda: waiting_listeners(sql, hub_schema), message="listening")
        sql.execute("SELECT pg_terminate_backend(%s)", [first])
        # The wait reads at once, polls while the listener is away, and tells
        # the hub again on the listener's new connection.
        wait_until(
            lambda: [pid for pid in waiting_listeners(sql, hub_schema) if pid != first],
            message="the wait to listen on a new connection",
        )
        activity_done(hub, "lost-1")
        last_turns(hub, 1)
        assert wait.done().status == "Completed"
    listened = [r["taskhub.listening"] for r in reads_of(wait_span(spans, "lost-1"))]
    heard_first = listened.index(True)
    assert False in listened[heard_first:]  # polled while the listener was lost
    assert listened[-1] is True


def test_the_timeout_bounds_a_listening_wait(
    spans: InMemorySpanExporter, make_client: ClientFactory, hub: TaskHub
) -> None:
    client = make_client()
    waiting_for_its_activity(hub, client, "slow-1")
    with pytest.raises(TaskHubError, match=r"still Running after 0\.3 s"):
        client.wait_for_completion("slow-1", timeout_s=0.3)
    span = wait_span(spans, "slow-1")
    assert span.attributes is not None and span.attributes["taskhub.outcome"] == "timeout"


def test_the_async_client_listens_too(
    spans: InMemorySpanExporter,
    database_url: str,
    hub_schema: str,
    make_client: ClientFactory,
    hub: TaskHub,
    sql: psycopg.Connection[Any],
) -> None:
    waiting_for_its_activity(hub, make_client(), "async-heard-1")

    async def scenario() -> InstanceStatus:
        async with AsyncClient.connect(database_url, hub_schema) as client:
            wait = asyncio.create_task(client.wait_for_completion("async-heard-1", 30))
            await wait_until_async(  # the loop keeps the wait going meanwhile
                lambda: waiting_listeners(sql, hub_schema), message="the wait to listen"
            )
            await asyncio.to_thread(activity_done, hub, "async-heard-1")
            await asyncio.to_thread(last_turns, hub, 1)
            return await wait

    assert asyncio.run(scenario()).status == "Completed"
    span = wait_span(spans, "async-heard-1")
    assert wakeups_of(span) >= 1
    assert len(reads_of(span)) <= 5
    assert reads_of(span)[-1]["taskhub.listening"] is True
    assert listeners(sql, hub_schema) == []  # closed with its client


def test_a_role_that_may_not_listen_polls_and_its_listener_gives_up_once(
    spans: InMemorySpanExporter,
    database_url: str,
    hub_schema: str,
    hub: TaskHub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An operator may read an instance but not run taskhub_listen: its wait
    polls, and the listener says so once instead of reconnecting for ever
    (a refused privilege is not a lost connection)."""
    hub.start_orchestration("operator-1", "Order")  # Pending: no runtime takes it
    with (
        caplog.at_level(logging.INFO, logger="provider.client.wakeups"),
        operator_of(database_url, hub_schema) as operator,
        Client.connect(operator.url, hub_schema) as client,
    ):
        with pytest.raises(WaitTimeout):
            client.wait_for_completion("operator-1", timeout_s=0.5)
        wait_until(lambda: "push wakeups refused" in caplog.text, message="the refusal")
    assert "permission denied for function taskhub_listen" in caplog.text
    assert "lost its connection" not in caplog.text
    reads = reads_of(wait_span(spans, "operator-1"))
    assert len(reads) >= 3 and {r["taskhub.listening"] for r in reads} == {False}
