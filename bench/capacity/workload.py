"""The capacity bench's one orchestration, the mix of the first probe: two
chained activities, a 20 ms timer, then a fan-out of two. Every activity is
the runtime's, so that both sides run exactly the same work."""

from __future__ import annotations

from typing import Any

from drills.soak.workload import Turn, charge, pack, reserve

ORDER = "CapacityOrder"
TIMER_MS = 20


def order(ctx: Any, n: int) -> Turn:
    reserved = yield ctx.schedule_activity("Reserve", n)
    charged = yield ctx.schedule_activity("Charge", n)
    yield ctx.schedule_timer(TIMER_MS)
    packed = yield ctx.all([ctx.schedule_activity("Pack", n), ctx.schedule_activity("Pack", n)])
    return {"reserved": reserved, "charged": charged, "packed": packed}


def register(runtime: Any) -> None:
    for name, activity in (("Reserve", reserve), ("Charge", charge), ("Pack", pack)):
        runtime.register_activity(name, activity)
    runtime.register_orchestration(ORDER, order)
