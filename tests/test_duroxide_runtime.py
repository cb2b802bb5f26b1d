"""The released duroxide 0.2.2 runtime runs unchanged on a schema our
migrations created (the queue core: activities, fan-out/fan-in, timers)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duroxide
import pytest


@pytest.fixture
def runtime_on_our_schema(database_url: str, hub_schema: str) -> Iterator[tuple[Any, Any]]:
    provider = duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, orchestration_concurrency=4),
    )

    @runtime.register_activity("Square")
    def square(ctx: Any, value: int) -> int:
        return value * value

    @runtime.register_orchestration("SumOfSquares")
    def sum_of_squares(ctx: Any, count: int) -> Any:
        results = yield ctx.all([ctx.schedule_activity("Square", n) for n in range(count)])
        yield ctx.schedule_timer(50)
        return sum(result["ok"] for result in results)

    runtime.start()
    try:
        yield runtime, duroxide.Client(provider)
    finally:
        runtime.shutdown(timeout_ms=2_000)


def test_fan_out_orchestrations_complete_on_our_schema(
    runtime_on_our_schema: tuple[Any, Any],
) -> None:
    _, client = runtime_on_our_schema
    for n in range(10):
        client.start_orchestration(f"sum-{n}", "SumOfSquares", 5)
    for n in range(10):
        result = client.wait_for_orchestration(f"sum-{n}", 30_000)
        assert result.status == "Completed"
        assert result.output == sum(i * i for i in range(5))
