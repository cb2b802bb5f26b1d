"""The soak's work: what the runtime and the Python worker register, and the
mix of orchestrations the application starts.

    SoakOrder     two chained activities, a 20 ms timer, a fan-out of two
                  (one of them tagged for the Python worker)
    SoakShipment  a SoakOrder as a sub-orchestration
    SoakApproval  waits for an event the application raises
    SoakRetrying  an activity that fails its first attempt, retried by policy
    SoakRefund    an activity that raises: the orchestration fails on purpose
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

ORDER = "SoakOrder"
SHIPMENT = "SoakShipment"
APPROVAL = "SoakApproval"
RETRYING = "SoakRetrying"
REFUND = "SoakRefund"

# Out of every 20 starts (deterministic by start number, so every run has the
# same mix): 12 orders, 3 shipments, 2 approvals, 2 retrying, 1 refund.
MIX = [ORDER] * 12 + [SHIPMENT] * 3 + [APPROVAL] * 2 + [RETRYING] * 2 + [REFUND]
# The kinds whose start-to-completion is the latency figure: the others wait
# on purpose (for an event, a retry's backoff).
TIMED = frozenset({ORDER, SHIPMENT})
DELIBERATE_FAILURES = frozenset({REFUND})

PYTHON_TAG = "python"
EVENT = "Approved"
WAITING = "waiting"
TIMER_MS = 20

Turn = Generator[Any, Any, Any]


def kind_of(n: int) -> str:
    return MIX[n % len(MIX)]


# -- the runtime's activities ---------------------------------------------------


def reserve(_ctx: Any, n: int) -> str:
    return f"reserved {n}"


def charge(_ctx: Any, n: int) -> dict[str, int]:
    return {"order": n, "amount": 10 * (n % 7 + 1)}


def pack(_ctx: Any, n: int) -> list[int]:
    return [n, n + 1]


def decline(_ctx: Any, n: int) -> None:
    raise RuntimeError(f"card of order {n} declined")


# -- orchestrations ---------------------------------------------------------------


def order(ctx: Any, n: int) -> Turn:
    reserved = yield ctx.schedule_activity("Reserve", n)
    charged = yield ctx.schedule_activity("Charge", n)
    yield ctx.schedule_timer(TIMER_MS)
    packed = yield ctx.all(
        [
            ctx.schedule_activity("Pack", n),
            ctx.schedule_activity("Label", n).with_tag(PYTHON_TAG),
        ]
    )
    return {"reserved": reserved, "charged": charged, "packed": packed}


def shipment(ctx: Any, n: int) -> Turn:
    return (yield ctx.schedule_sub_orchestration(ORDER, n))


def approval(ctx: Any, n: int) -> Turn:
    # The status tells the application we subscribed: an event raised before
    # would be dropped by the runtime.
    ctx.set_custom_status(WAITING)
    data = yield ctx.wait_for_event(EVENT)
    return {"n": n, "approved": data}


def retrying(ctx: Any, n: int) -> Turn:
    flaky = ctx.schedule_activity_with_retry("Flaky", n, {"max_attempts": 3})
    return (yield flaky.with_tag(PYTHON_TAG))


def refund(ctx: Any, n: int) -> Turn:
    return (yield ctx.schedule_activity("Decline", n))


def register_with_runtime(runtime: Any) -> None:
    for name, activity in (
        ("Reserve", reserve),
        ("Charge", charge),
        ("Pack", pack),
        ("Decline", decline),
    ):
        runtime.register_activity(name, activity)
    for name, orchestration in (
        (ORDER, order),
        (SHIPMENT, shipment),
        (APPROVAL, approval),
        (RETRYING, retrying),
        (REFUND, refund),
    ):
        runtime.register_orchestration(name, orchestration)
