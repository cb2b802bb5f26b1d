"""OpenTelemetry traces (provider/tracing.py): a span per provider call, the
caller's W3C trace context stored with the instance (in the caller's
transaction, or not at all), and workers that continue it. The same through
the real runtime and another process: tests/runtime/test_tracing_across_processes.py."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from devkit.waiting import wait_until, wait_until_async
from devkit.workloads.work_items import (
    activity_execute,
    event,
    metadata,
    orchestration_started,
)
from provider import (
    ActivityContext,
    ActivityWorker,
    AsyncActivityWorker,
    AsyncClient,
    AsyncTaskHub,
    Client,
    StartRequest,
    TaskHub,
    WaitTimeout,
    tracing,
)
from provider.errors import InvalidInput, PermanentError
from tests.support.tracing_sdk import provider_traced_by_sdk

HubFactory = Callable[..., TaskHub]
TRACED_ENQUEUE = (
    'SELECT "{schema}".taskhub_enqueue_traced_orchestrator_work(%s, %s, now(), %s, NULL)'
)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """An SDK for the provider's spans, for this test only."""
    with provider_traced_by_sdk() as (_, exporter):
        yield exporter


def request_tracer() -> trace.Tracer:
    """The application's own tracer, on the SDK the provider uses."""
    return tracing._tracer_provider.get_tracer("the-application")  # type: ignore[no-any-return]


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def only(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(exporter, name)
    assert len(found) == 1, [span.name for span in exporter.get_finished_spans()]
    return found[0]


def stored_context(sql: psycopg.Connection[Any], schema: str, instance: str) -> Any:
    return sql.execute(
        f'SELECT traceparent, tracestate FROM "{schema}".taskhub_trace_contexts'
        " WHERE instance_id = %s",
        [instance],
    ).fetchone()


def traceparent_of(span: ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


def queued(sql: psycopg.Connection[Any], schema: str, instance: str) -> list[str]:
    rows = sql.execute(
        f'SELECT work_item FROM "{schema}".orchestrator_queue WHERE instance_id = %s ORDER BY id',
        [instance],
    ).fetchall()
    return [str(row[0]) for row in rows]


def test_a_start_stores_its_spans_context_and_the_runtimes_exact_work_item(
    spans: InMemorySpanExporter, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    hub.start_orchestration("untraced", "Order", {"id": 1})  # in no span of ours
    with request_tracer().start_as_current_span("POST /orders"):
        hub.start_orchestration("traced", "Order", {"id": 1})

    start = next(s for s in named(spans, "start_orchestration") if s.parent is not None)
    request = only(spans, "POST /orders")
    assert start.parent is not None and start.parent.span_id == request.context.span_id
    assert start.kind == trace.SpanKind.PRODUCER
    assert start.attributes is not None
    assert start.attributes["taskhub.schema"] == hub_schema
    assert start.attributes["taskhub.instance_id"] == "traced"
    assert start.attributes["taskhub.outcome"] == "ok"
    # The context of the start's own span, kept by instance; the work item is
    # the one the duroxide client writes, untouched.
    assert stored_context(sql, hub_schema, "traced") == (traceparent_of(start), None)
    # Outside the application's spans, the start's span is the trace's root.
    root = next(s for s in named(spans, "start_orchestration") if s.parent is None)
    assert stored_context(sql, hub_schema, "untraced") == (traceparent_of(root), None)
    assert [
        item.replace('"traced"', '"untraced"') for item in queued(sql, hub_schema, "traced")
    ] == (queued(sql, hub_schema, "untraced"))


def test_outside_any_span_nothing_is_stored(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    hub.start_orchestration("no-sdk", "Order")
    assert stored_context(sql, hub_schema, "no-sdk") is None
    assert len(queued(sql, hub_schema, "no-sdk")) == 1


def test_the_context_commits_and_rolls_back_with_the_callers_transaction(
    spans: InMemorySpanExporter,
    hub: TaskHub,
    hub_schema: str,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    for instance, commit in (("rolled-back", False), ("committed", True)):
        with psycopg.connect(database_url) as conn:
            with request_tracer().start_as_current_span("POST /orders"):
                hub.start_orchestration(instance, "Order", conn=conn)
            assert stored_context(sql, hub_schema, instance) is None  # not yet visible
            if commit:
                conn.commit()
            else:
                conn.rollback()
    assert stored_context(sql, hub_schema, "rolled-back") is None
    assert queued(sql, hub_schema, "rolled-back") == []
    assert stored_context(sql, hub_schema, "committed") is not None
    assert len(queued(sql, hub_schema, "committed")) == 1


def test_the_first_context_stays_and_events_record_one_only_for_an_existing_instance(
    spans: InMemorySpanExporter, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    tracer = request_tracer()
    with tracer.start_as_current_span("first"):
        hub.start_orchestration("twice", "Order")
    first = stored_context(sql, hub_schema, "twice")
    with tracer.start_as_current_span("second"):
        hub.start_orchestration("twice", "Order")
        hub.raise_event("twice", "Paid", True)
        hub.raise_event("never-started", "Paid", True)
    assert stored_context(sql, hub_schema, "twice") == first
    # The event is queued (as duroxide does) but leaves no context behind.
    assert len(queued(sql, hub_schema, "never-started")) == 1
    assert stored_context(sql, hub_schema, "never-started") is None
    assert {s.name for s in spans.get_finished_spans()} >= {"raise_event", "start_orchestration"}


def test_a_child_continues_its_nearest_traced_ancestor_and_delete_takes_the_context(
    spans: InMemorySpanExporter, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with request_tracer().start_as_current_span("POST /orders"):
        hub.start_orchestration("root", "Order")
    for instance, parent in (("root", None), ("child", "root"), ("grandchild", "child")):
        sql.execute(
            f'INSERT INTO "{hub_schema}".instances (instance_id, orchestration_name,'
            " created_at, updated_at, parent_instance_id) VALUES (%s, 'Order', now(), now(), %s)",
            [instance, parent],
        )
    root = hub.trace_context("root")
    assert root is not None
    assert hub.trace_context("grandchild") == root
    assert hub.trace_context("unknown") is None
    hub.delete_instances_atomic(["root", "child", "grandchild"], force=True)
    assert stored_context(sql, hub_schema, "root") is None


@pytest.mark.parametrize(
    "traceparent",
    [
        "not a traceparent",
        "00-" + "0" * 32 + "-" + "1" * 16 + "-01",  # an invalid trace id
        "00-" + "a" * 32 + "-" + "0" * 16 + "-01",  # an invalid span id
        "01-" + "a" * 32 + "-" + "b" * 16 + "-01",  # a version we do not know
        None,
    ],
)
def test_a_bad_traceparent_is_refused_and_changes_nothing(
    traceparent: str | None, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="p_traceparent must be"):
        sql.execute(
            TRACED_ENQUEUE.format(schema=hub_schema),
            ["bad", '{"StartOrchestration": {"instance": "bad"}}', traceparent],
        )
    assert queued(sql, hub_schema, "bad") == []
    assert stored_context(sql, hub_schema, "bad") is None


def test_bad_input_of_a_traced_start_writes_neither_message_nor_context(
    spans: InMemorySpanExporter, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with request_tracer().start_as_current_span("POST /orders"), pytest.raises(PermanentError):
        # Refused by the procedure: a work item of no known shape.
        hub.enqueue_orchestrator_work("shapeless", '{"not": "a work item", "x": 1}')
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        sql.execute(
            TRACED_ENQUEUE.format(schema=hub_schema),
            [
                "shapeless",
                '{"not": "a work item", "x": 1}',
                "00-" + "a" * 32 + "-" + "b" * 16 + "-01",
            ],
        )
    assert queued(sql, hub_schema, "shapeless") == []
    assert stored_context(sql, hub_schema, "shapeless") is None
    with request_tracer().start_as_current_span("POST /orders"), pytest.raises(InvalidInput):
        hub.start_orchestration("", "Order")
    refused = [s for s in named(spans, "start_orchestration")][-1]
    assert refused.attributes is not None and refused.attributes["taskhub.outcome"] == "refused"
    assert refused.status.status_code == trace.StatusCode.ERROR


def test_an_empty_poll_leaves_no_span_and_a_lease_leaves_one(
    spans: InMemorySpanExporter, hub: TaskHub
) -> None:
    assert hub.fetch_work_item() is None
    assert hub.fetch_orchestration_item() is None
    assert named(spans, "fetch_work_item") == named(spans, "fetch_orchestration_item") == []
    hub.enqueue_worker_work(activity_execute("leased", 1))
    lease = hub.fetch_work_item()
    assert lease is not None
    fetched = only(spans, "fetch_work_item")
    assert fetched.attributes is not None
    assert fetched.attributes["taskhub.instance_id"] == "leased"
    assert fetched.attributes["taskhub.outcome"] == "ok"
    assert fetched.start_time is not None and fetched.end_time is not None
    assert fetched.end_time > fetched.start_time


def traced_activity(hub: TaskHub, spans: InMemorySpanExporter, instance: str) -> ReadableSpan:
    """Start `instance` in a request span and queue one activity for it."""
    with request_tracer().start_as_current_span("POST /orders"):
        hub.start_orchestration(instance, "Order")
    hub.enqueue_worker_work(activity_execute(instance, 1, name="Charge"))
    return only(spans, "start_orchestration")


def assert_continued(spans: InMemorySpanExporter, start: ReadableSpan, outcome: str) -> None:
    activity = only(spans, "activity Charge")
    handler = only(spans, "charge the card")
    assert activity.kind == trace.SpanKind.CONSUMER
    assert activity.context.trace_id == start.context.trace_id
    assert activity.parent is not None and activity.parent.span_id == start.context.span_id
    assert handler.parent is not None and handler.parent.span_id == activity.context.span_id
    assert activity.attributes is not None
    assert activity.attributes["taskhub.outcome"] == outcome
    assert activity.attributes["taskhub.activity_name"] == "Charge"


@pytest.mark.parametrize("fails", [False, True], ids=["completes", "fails"])
def test_the_worker_runs_the_activity_in_the_starters_trace(
    fails: bool, spans: InMemorySpanExporter, hub: TaskHub
) -> None:
    start = traced_activity(hub, spans, "order-1")
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)

    @worker.activity("Charge")
    def charge(ctx: ActivityContext, _: Any) -> str:
        with request_tracer().start_as_current_span("charge the card"):
            if fails:
                raise RuntimeError("card declined")
            return "charged"

    with worker:
        wait_until(lambda: worker.stats.completed + worker.stats.failed == 1, timeout_s=10)
    assert_continued(spans, start, "failed" if fails else "completed")
    if fails:
        activity = only(spans, "activity Charge")
        assert activity.status.status_code == trace.StatusCode.ERROR
        assert "card declined" in (activity.status.description or "")


@pytest.mark.parametrize("coroutine", [False, True], ids=["thread", "coroutine"])
def test_the_asyncio_worker_runs_the_activity_in_the_starters_trace(
    coroutine: bool,
    spans: InMemorySpanExporter,
    hub: TaskHub,
    database_url: str,
    hub_schema: str,
) -> None:
    start = traced_activity(hub, spans, "order-2")

    def charge_in_a_thread(ctx: ActivityContext, _: Any) -> str:
        with request_tracer().start_as_current_span("charge the card"):
            return "charged"

    async def charge_on_the_loop(ctx: ActivityContext, _: Any) -> str:
        with request_tracer().start_as_current_span("charge the card"):
            await asyncio.sleep(0)  # stand-in work: a span across an await
            return "charged"

    async def serve() -> None:
        async with AsyncTaskHub.connect(database_url, hub_schema) as async_hub:
            worker = AsyncActivityWorker(async_hub, concurrency=1, idle_poll_ms=10)
            worker.register("Charge", charge_on_the_loop if coroutine else charge_in_a_thread)
            async with worker:
                await wait_until_async(lambda: worker.stats.completed == 1, timeout_s=10)

    asyncio.run(serve())
    assert_continued(spans, start, "completed")


def test_without_an_sdk_the_worker_reads_no_context(hub: TaskHub, hub_schema: str) -> None:
    """No SDK records: the worker never calls taskhub_trace_context."""
    calls: list[str] = []
    original = hub.trace_context

    def counting(instance_id: str) -> Any:
        calls.append(instance_id)
        return original(instance_id)

    hub.trace_context = counting  # type: ignore[method-assign]
    hub.enqueue_worker_work(activity_execute("plain", 1, name="Charge"))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Charge", lambda ctx, _: "charged")
    with worker:
        wait_until(lambda: worker.stats.completed == 1, timeout_s=10)
    assert calls == []
    assert not tracing.recording()


# -- the application client (Client, AsyncClient) -------------------------------


def test_the_clients_start_is_a_producer_span_start_orchestration_with_its_instance(
    spans: InMemorySpanExporter, database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """Issue 58: Client.start made a CLIENT span `start` without the instance."""
    with (
        Client.connect(database_url, hub_schema) as client,
        request_tracer().start_as_current_span("POST /orders"),
    ):
        client.start("order-7", "Order", {"id": 7})
    start = only(spans, "start_orchestration")
    assert start.kind == trace.SpanKind.PRODUCER
    assert start.parent is not None
    assert start.parent.span_id == only(spans, "POST /orders").context.span_id
    assert start.attributes is not None
    assert start.attributes["taskhub.instance_id"] == "order-7"
    assert start.attributes["taskhub.operation"] == "start"
    assert start.attributes["taskhub.outcome"] == "ok"
    # The workers continue this span: its context is the one stored.
    assert stored_context(sql, hub_schema, "order-7") == (traceparent_of(start), None)


def test_start_many_is_one_producer_span_with_the_count(
    spans: InMemorySpanExporter, database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with Client.connect(database_url, hub_schema) as client:
        client.start_many(StartRequest(f"many-{n}", "Order", n) for n in range(3))
    start = only(spans, "start_orchestration")
    assert start.kind == trace.SpanKind.PRODUCER
    assert start.attributes is not None
    assert start.attributes["taskhub.instance_count"] == 3
    assert start.attributes["taskhub.operation"] == "start_many"
    assert "taskhub.instance_id" not in start.attributes  # three: not one to name
    for n in range(3):
        assert stored_context(sql, hub_schema, f"many-{n}") == (traceparent_of(start), None)


def test_the_async_clients_starts_are_the_same_spans(
    spans: InMemorySpanExporter, database_url: str, hub_schema: str
) -> None:
    async def scenario() -> None:
        async with AsyncClient.connect(database_url, hub_schema) as client:
            await client.start("async-1", "Order")
            await client.start_many([StartRequest("async-2", "Order")])

    asyncio.run(scenario())
    one, many = named(spans, "start_orchestration")
    assert {one.kind, many.kind} == {trace.SpanKind.PRODUCER}
    assert one.attributes is not None and many.attributes is not None
    assert one.attributes["taskhub.instance_id"] == "async-1"
    assert many.attributes["taskhub.instance_id"] == "async-2"  # a batch of one names it
    assert many.attributes["taskhub.instance_count"] == 1


def status_reads(span: ReadableSpan) -> list[str]:
    return [
        str((e.attributes or {})["taskhub.status"]) for e in span.events if e.name == "status read"
    ]


def test_a_wait_is_one_span_with_an_event_per_status_read(
    spans: InMemorySpanExporter, database_url: str, hub_schema: str, hub: TaskHub
) -> None:
    """Issue 58: each poll of wait_for_completion was a root span of its own."""
    with Client.connect(database_url, hub_schema) as client:
        client.start("order-8", "Order")
        spans.clear()
        with request_tracer().start_as_current_span("GET /orders/8"), pytest.raises(WaitTimeout):
            client.wait_for_completion("order-8", timeout_s=0.2)  # Pending: it reads on
        request = only(spans, "GET /orders/8")
        wait = only(spans, "wait_for_completion")
        assert wait.kind == trace.SpanKind.CLIENT
        assert wait.parent is not None and wait.parent.span_id == request.context.span_id
        assert wait.attributes is not None
        assert wait.attributes["taskhub.instance_id"] == "order-8"
        assert wait.attributes["taskhub.outcome"] == "timeout"
        reads = status_reads(wait)
        assert len(reads) >= 3 and set(reads) == {"Pending"}
        # Its reads are its events: no span of their own, root or child.
        assert sorted(s.name for s in spans.get_finished_spans()) == [
            "GET /orders/8",
            "wait_for_completion",
        ]

        spans.clear()
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        hub.ack_orchestration_item(
            item.lock_token,
            1,
            history_delta=[
                orchestration_started("order-8", "Order"),
                event(2, "order-8", "OrchestrationCompleted", output='"done"'),
            ],
            metadata=metadata("Order", status="Completed", output='"done"'),
        )
        spans.clear()
        assert client.wait_for_completion("order-8", timeout_s=5).status == "Completed"
        done = only(spans, "wait_for_completion")
        assert done.attributes is not None and done.attributes["taskhub.outcome"] == "ok"
        assert status_reads(done) == ["Completed"]
        # Outside a wait, a read is a span of its own as before.
        client.get_status("order-8")
        assert len(named(spans, "status")) == 1
