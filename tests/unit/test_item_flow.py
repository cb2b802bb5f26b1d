"""item_flow (provider/worker/item_flow.py) as the pure generator it is:
each row feeds a step's result in and names the step that must come next,
with no hub, no thread and no clock. What both workers do with an item is
decided here; tests/unit/test_worker_protocol.py and
test_async_worker_protocol.py show each face performing the steps."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import pytest

from provider import ActivityContext, LockLost, PermanentError, RetryableError, TaskHubConfig
from provider.types import JsonObject, WorkItemLease
from provider.worker.activity_item import ActivityItem
from provider.worker.core import ACK_BACKOFF, UNREGISTERED_RETRY_MS, WorkerCore
from provider.worker.item_flow import (
    Abandon,
    Ack,
    InFlight,
    Outcome,
    Pause,
    Work,
    given_back_on_stop,
    item_flow,
)
from tests.unit.flow_script import Row, play

TOKEN = "lock_1"
COMPLETED: JsonObject = {
    "ActivityCompleted": {"instance": "i", "execution_id": 1, "id": 1, "result": "42"}
}
FAILED: JsonObject = {"ActivityFailed": {"instance": "i", "execution_id": 1, "id": 1}}


def echo(ctx: ActivityContext, value: Any) -> Any:
    return value


def leased(name: str = "Echo", *, attempt: int = 1, value: Any = 21) -> WorkItemLease:
    body = {"instance": "i", "execution_id": 1, "id": 1, "name": name, "input": json.dumps(value)}
    return WorkItemLease({"ActivityExecute": body}, TOKEN, attempt)


UNREADABLE = WorkItemLease({"SomethingElse": {}}, TOKEN, 1)


def worker_core() -> WorkerCore:
    core = WorkerCore(TaskHubConfig(url="postgresql://unused"), max_attempts=3)
    core.register("Echo", echo)
    return core


def nonzero(core: WorkerCore) -> dict[str, int]:
    """The statistics the flow moved."""
    return {name: n for name, n in dataclasses.asdict(core.stats).items() if n}


# -- what a row expects ----------------------------------------------------------


def runs(value: Any) -> Any:
    """Work: the registered handler, on the item's input, in the item's context."""

    def expected(step: Any) -> bool:
        return (
            isinstance(step, Work)
            and step.handler is echo
            and step.value == value
            and (step.context.lock_token, step.context.activity_id) == (TOKEN, 1)
            and not step.context.token.cancelled
        )

    return expected


def acks_poison(step: Any) -> bool:
    return isinstance(step, Ack) and "Poison" in step.completion["ActivityFailed"]["details"]


def pause_after(failures: int) -> Any:
    """The ack back-off after `failures` failed attempts in a row (with its jitter)."""
    ceiling = ACK_BACKOFF.ceiling_s(failures)
    return lambda step: isinstance(step, Pause) and ceiling / 2 <= step.seconds <= ceiling


def transient() -> RetryableError:
    return RetryableError("ack_work_item", "connection lost", "08006")


# -- the table -------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    lease: WorkItemLease
    script: list[Row]
    stats: dict[str, int]  # the statistics that are no longer 0 after it
    stopping: bool = False  # the worker stopped before the flow began


RUN = (runs(21), Outcome(COMPLETED, lease_lost=False))

CASES: dict[str, Case] = {
    "a result is acked": Case(
        leased(), [RUN, (Ack(COMPLETED), None)], {"started": 1, "completed": 1}
    ),
    "a failure is acked and counted as failed": Case(
        leased(),
        [(runs(21), Outcome(FAILED, lease_lost=False)), (Ack(FAILED), None)],
        {"started": 1, "failed": 1},
    ),
    "cancelled work acks nothing and counts as lost": Case(
        leased(), [(runs(21), Outcome(None, lease_lost=False))], {"started": 1, "lost": 1}
    ),
    "a lease lost while it ran acks nothing, even a result": Case(
        leased(), [(runs(21), Outcome(COMPLETED, lease_lost=True))], {"started": 1, "lost": 1}
    ),
    "a transient ack failure is retried after a back-off": Case(
        leased(),
        [RUN, (Ack(COMPLETED), transient()), (pause_after(1), None), (Ack(COMPLETED), None)],
        {"started": 1, "completed": 1},
    ),
    "the ack gives up after ACK_ATTEMPTS transient failures": Case(
        leased(),
        [
            RUN,
            (Ack(COMPLETED), transient()),
            (pause_after(1), None),
            (Ack(COMPLETED), transient()),
            (pause_after(2), None),
            (Ack(COMPLETED), transient()),
        ],
        {"started": 1},
    ),
    "an ack refused for a lost lease is not retried": Case(
        leased(),
        [RUN, (Ack(COMPLETED), LockLost("ack_work_item", "gone", "TH001"))],
        {"started": 1, "lost": 1},
    ),
    "a permanent ack failure is not retried": Case(
        leased(),
        [RUN, (Ack(COMPLETED), PermanentError("ack_work_item", "bad", "22023"))],
        {"started": 1},
    ),
    "attempt max_attempts still runs": Case(
        leased(attempt=3), [RUN, (Ack(COMPLETED), None)], {"started": 1, "completed": 1}
    ),
    "an item fetched too often is failed as poison, unrun": Case(
        leased(attempt=4), [(acks_poison, None)], {"poisoned": 1}
    ),
    "poison counts even when its ack fails": Case(
        leased(attempt=4),
        [(acks_poison, PermanentError("ack_work_item", "bad", "22023"))],
        {"poisoned": 1},
    ),
    "an unregistered activity is given back later, the attempt counted": Case(
        leased("Unknown"), [(Abandon(UNREGISTERED_RETRY_MS, ignore_attempt=False), None)], {}
    ),
    "a failed give-back is left to the lease's end": Case(
        leased("Unknown"),
        [(Abandon(UNREGISTERED_RETRY_MS, ignore_attempt=False), transient())],
        {},
    ),
    "an unreadable item is left alone": Case(UNREADABLE, [], {}),
    "an item fetched while the worker stops is given back unrun, uncounted": Case(
        leased(), [(Abandon(None, ignore_attempt=True), None)], {"given_back": 1}, stopping=True
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES)
def test_item_flow(case: Case) -> None:
    core, in_flight = worker_core(), InFlight()
    if case.stopping:
        in_flight.close()
    item = ActivityItem.fetched(case.lease, fetched_at=0.0)
    assert play(item_flow(core, item, in_flight), case.script) is None
    assert nonzero(core) == case.stats
    assert len(in_flight) == 0  # every claim is let go


# -- the stop, while the flow is at a step -----------------------------------------


def test_a_running_item_is_in_flight_and_the_stop_gives_it_back_cancelled() -> None:
    core, in_flight = worker_core(), InFlight()
    flow = item_flow(core, ActivityItem.fetched(leased(), fetched_at=0.0), in_flight)
    work = next(flow)
    assert isinstance(work, Work) and len(in_flight) == 1
    (claim,) = in_flight.close()  # stop() takes it
    # Its handler then returns (cancelled or not): the stop gave it back, no ack.
    with pytest.raises(StopIteration):
        flow.send(Outcome(COMPLETED, lease_lost=False))
    assert len(in_flight) == 0 and nonzero(core) == {"started": 1}
    script: list[Row] = [(Abandon(None, ignore_attempt=True), None)]
    assert play(given_back_on_stop(core, claim), script) is None
    assert work.context.token.cancelled and work.context.token.reason == "worker shutting down"
    assert nonzero(core) == {"started": 1, "given_back": 1}


def test_a_stop_between_the_look_and_the_claim_gives_the_item_back_unrun() -> None:
    class StopsAtTheClaim(InFlight):
        """Open at the flow's first look, closed when it claims the item."""

        @property
        def closed(self) -> bool:
            self.close()
            return False

    core = worker_core()
    item = ActivityItem.fetched(leased(), fetched_at=0.0)
    script: list[Row] = [(Abandon(None, ignore_attempt=True), None)]
    assert play(item_flow(core, item, StopsAtTheClaim()), script) is None
    assert nonzero(core) == {"given_back": 1}
