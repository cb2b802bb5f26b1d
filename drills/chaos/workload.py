"""The orchestrations and activities every chaos worker registers, and the
output each orchestration must end with.

Activities run at least once (a killed worker's activity runs again, a lost
ack is redone), so they are pure: the same input always gives the same output.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

PIPELINE = "ChaosPipeline"
CHILD = "ChaosChild"
FAN_OUT = 4
TIMER_MS = 50
# Long enough that a SIGKILL often lands while activities are running.
ACTIVITY_WORK_S = 0.01

Turn = Generator[Any, Any, Any]


def add(_ctx: Any, pair: list[int]) -> int:
    time.sleep(ACTIVITY_WORK_S)
    return pair[0] + pair[1]


def multiply(_ctx: Any, pair: list[int]) -> int:
    time.sleep(ACTIVITY_WORK_S)
    return pair[0] * pair[1]


def square(_ctx: Any, value: int) -> int:
    time.sleep(ACTIVITY_WORK_S)
    return value * value


def child(ctx: Any, value: int) -> Turn:
    """A sub-orchestration that calls one activity."""
    squared = yield ctx.schedule_activity("Square", value)
    return squared


def pipeline(ctx: Any, n: int) -> Turn:
    """A chain of three activities, a fan-out of four, a sub-orchestration, a timer."""
    value = yield ctx.schedule_activity("Add", [n, 1])
    value = yield ctx.schedule_activity("Multiply", [value, 2])
    value = yield ctx.schedule_activity("Add", [value, 3])
    squares = yield ctx.all([ctx.schedule_activity("Square", value + k) for k in range(FAN_OUT)])
    from_child = yield ctx.schedule_sub_orchestration(CHILD, n)
    yield ctx.schedule_timer(TIMER_MS)
    return {"chain": value, "fan_out": sum(s["ok"] for s in squares), "child": from_child}


def expected_output(n: int) -> dict[str, int]:
    """What `pipeline(n)` returns when every step ran as written."""
    chain = (n + 1) * 2 + 3
    return {
        "chain": chain,
        "fan_out": sum((chain + k) ** 2 for k in range(FAN_OUT)),
        "child": n * n,
    }


def register(runtime: Any) -> None:
    runtime.register_activity("Add", add)
    runtime.register_activity("Multiply", multiply)
    runtime.register_activity("Square", square)
    runtime.register_orchestration(CHILD, child)
    runtime.register_orchestration(PIPELINE, pipeline)
