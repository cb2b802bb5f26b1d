"""The duroxide 0.2.2 runtime itself running a batch of fan-out orchestrations
(each schedules `fan_out` activities and joins them) on a schema."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import duroxide


@dataclass(frozen=True)
class EndToEndSettings:
    orchestrations: int = 100
    fan_out: int = 5
    concurrency: int = 4


def run(url: str, schema: str, s: EndToEndSettings) -> dict[str, float]:
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(
            dispatcher_poll_interval_ms=10,
            orchestration_concurrency=s.concurrency,
            worker_concurrency=s.concurrency,
        ),
    )

    @runtime.register_activity("Task")
    def task(ctx: Any, n: int) -> int:
        return n + 1

    @runtime.register_orchestration("FanOut")
    def fan_out(ctx: Any, width: int) -> Any:
        results = yield ctx.all([ctx.schedule_activity("Task", n) for n in range(width)])
        return len(results)

    runtime.start()
    client = duroxide.Client(provider)
    failed = 0
    started = time.perf_counter()
    try:
        for n in range(s.orchestrations):
            client.start_orchestration(f"fan-{n}", "FanOut", s.fan_out)
        for n in range(s.orchestrations):
            result = client.wait_for_orchestration(f"fan-{n}", 120_000)
            failed += result.status != "Completed"
        elapsed = time.perf_counter() - started
    finally:
        runtime.shutdown(timeout_ms=2_000)
    return {
        "orchestrations_per_s": s.orchestrations / elapsed,
        "activities_per_s": s.orchestrations * s.fan_out / elapsed,
        "failed": float(failed),
    }
