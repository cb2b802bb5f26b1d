"""One trace from a web request to the activity that served it, across the
real runtime and another process: the request starts an orchestration inside
its own transaction (the outbox); the duroxide 0.2.2 runtime runs it and its
sub-orchestration; a taskhub-pg worker in another process runs their
`python`-tagged activities, continuing the trace stored with the instance
(the sub-orchestration's through its parent). Printed as a tree (-s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import duroxide
import psycopg
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider import TaskHub
from tests.support.paths import REPO
from tests.support.span_tree import SpanRecord, tree
from tests.support.tracing_sdk import provider_traced_by_sdk


@pytest.fixture
def sdk() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    with provider_traced_by_sdk() as sdk:
        yield sdk


@pytest.fixture
def traced_worker(database_url: str, hub_schema: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.traced_worker", database_url, hub_schema, "2"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def test_one_trace_from_the_request_through_the_runtime_to_the_workers_handlers(
    sdk: tuple[TracerProvider, InMemorySpanExporter],
    traced_worker: subprocess.Popen[str],
    database_url: str,
    hub_schema: str,
    hub: TaskHub,
) -> None:
    tracer_provider, exporter = sdk
    dx_provider = duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    runtime = duroxide.Runtime(dx_provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))

    @runtime.register_orchestration("Ship")
    def ship(ctx: Any, order: Any) -> Any:
        label = yield ctx.schedule_activity("Label", order).with_tag("python")
        return label

    @runtime.register_orchestration("PlaceOrder")
    def place_order(ctx: Any, order: Any) -> Any:
        charged = yield ctx.schedule_activity("Charge", order).with_tag("python")
        shipped = yield ctx.schedule_sub_orchestration("Ship", order)
        return {"charged": charged, "shipped": shipped}

    order = {"id": "order-7", "amount": 42}
    application = tracer_provider.get_tracer("the-web-application")
    runtime.start()
    try:
        with (
            application.start_as_current_span("POST /orders") as request,
            psycopg.connect(database_url) as conn,  # the request's own transaction
        ):
            conn.execute("SELECT 1")  # its own writes would be here
            hub.start_orchestration("order-7", "PlaceOrder", order, conn=conn)
            conn.commit()
        result = duroxide.Client(dx_provider).wait_for_orchestration("order-7", 30_000)
        assert traced_worker.stdout is not None
        worker_spans = json.loads(traced_worker.stdout.readline())
    finally:
        runtime.shutdown(timeout_ms=2_000)

    assert result.status == "Completed", result.error
    assert result.output == {"charged": "charged 42", "shipped": "label for order-7"}
    here = f"test pid {os.getpid()}"
    spans = [SpanRecord.of(span, here) for span in exporter.get_finished_spans()]
    spans += [SpanRecord.from_json(record) for record in worker_spans]
    trace_id = f"{request.get_span_context().trace_id:032x}"
    printed = tree(spans, trace_id)
    print("\n" + printed)

    in_trace = {span.name: span for span in spans if span.trace_id == trace_id}
    start = in_trace["start_orchestration"]
    assert start.parent_id == in_trace["POST /orders"].span_id
    for activity, handler in (
        ("activity Charge", "charge the card"),
        ("activity Label", "print the label"),
    ):
        assert in_trace[activity].parent_id == start.span_id, printed
        assert in_trace[activity].process != start.process
        assert in_trace[handler].parent_id == in_trace[activity].span_id, printed
    assert in_trace["activity Label"].attributes["taskhub.instance_id"] != "order-7"  # the child
