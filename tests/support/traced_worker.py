"""A taskhub-pg activity worker in a process of its own, with the
OpenTelemetry SDK and an in-memory exporter: it runs the `python`-tagged
activities Charge and Label, each handler in a span of its own, and once it
has completed COUNT of them prints its finished spans as JSON and exits.

    python -m tests.support.traced_worker URL SCHEMA COUNT
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from typing import Any

from opentelemetry import trace

from provider import ActivityContext, ActivityWorker, TagFilter, TaskHub
from tests.support.span_tree import SpanRecord
from tests.support.tracing_sdk import in_memory_sdk


def main(url: str, schema: str, count: int) -> None:
    provider, exporter = in_memory_sdk()
    trace.set_tracer_provider(provider)  # the application's global SDK, as usual
    tracer = trace.get_tracer("the-worker-application")

    hub = TaskHub.connect(url, schema)
    worker = ActivityWorker(hub, concurrency=2, tags=TagFilter.only("python"), idle_poll_ms=10)

    @worker.activity("Charge")
    def charge(ctx: ActivityContext, order: Any) -> str:
        with tracer.start_as_current_span("charge the card"):
            return f"charged {order['amount']}"

    @worker.activity("Label")
    def label(ctx: ActivityContext, order: Any) -> str:
        with tracer.start_as_current_span("print the label"):
            return f"label for {order['id']}"

    with worker:
        print("ready", flush=True)
        deadline = time.monotonic() + 60
        while worker.stats.completed < count and time.monotonic() < deadline:
            time.sleep(0.02)  # pacing: the test waits on this process's output
    hub.close()
    process = f"worker pid {os.getpid()}"
    records = [
        dataclasses.asdict(SpanRecord.of(span, process)) for span in exporter.get_finished_spans()
    ]
    print(json.dumps(records), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
