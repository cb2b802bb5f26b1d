"""One mode of bench/tracing_cost.py in a process of its own: it times each
operation and prints microseconds per call as JSON.

    python -m bench.tracing_cost_child MODE URL SCHEMA CALLS

"not installed" makes the opentelemetry package unimportable before the
provider is imported (this module imports nothing of the provider at its top).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable

MODES = ("not installed", "API, no SDK", "SDK recording")
OPERATIONS = ("start_orchestration", "fetch_work_item (empty)", "worker item: enqueue+fetch+ack")


def install_sdk() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from provider import tracing

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    tracing.set_tracer_provider(provider)


def timings(url: str, schema: str, calls: int) -> dict[str, float]:
    from provider import TaskHub

    prefix = uuid.uuid4().hex[:8]
    with TaskHub.connect(url, schema, pool_max_size=1) as hub:

        def start(i: int) -> None:
            hub.start_orchestration(f"{prefix}-{i}", "Bench")

        def poll(i: int) -> None:
            hub.fetch_work_item()

        def worker_item(i: int) -> None:
            body = {"instance": f"{prefix}-{i}", "execution_id": 1, "id": 1, "name": "Bench"}
            hub.enqueue_worker_work({"ActivityExecute": {**body, "input": "{}"}})
            lease = hub.fetch_work_item()
            assert lease is not None
            hub.ack_work_item(lease.lock_token, None)

        operations: tuple[Callable[[int], None], ...] = (start, poll, worker_item)
        result = {}
        for name, operation in zip(OPERATIONS, operations, strict=True):
            for i in range(min(50, calls)):  # warm: the pool, the plans
                operation(-i - 1)
            started = time.perf_counter()
            for i in range(calls):
                operation(i)
            result[name] = (time.perf_counter() - started) / calls * 1e6
    return result


def main(mode: str, url: str, schema: str, calls: int) -> None:
    if mode == MODES[0]:
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]  # import fails
    elif mode == MODES[2]:
        install_sdk()
    from provider import tracing

    assert tracing.enabled() == (mode != MODES[0]), mode
    print(json.dumps(timings(url, schema, calls)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
