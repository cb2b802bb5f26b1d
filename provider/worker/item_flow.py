"""One work item, from its fetch to its ack, written once for both workers.

The item is read once, at fetch, into an ActivityItem
(provider/worker/activity_item.py). What happens to it
then (fail it as poison, give it back for want of a handler or because the
worker stops, run its handler while its lease is kept, ack the outcome with
the retry policy, or ack nothing when the lease was lost) is `item_flow`: a
generator of the steps it needs done. The threaded worker performs each step
with a call, the asyncio worker with an await (provider/worker/flows.py);
each keeps only how it performs a step and how it runs a handler.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from provider.errors import TaskHubError
from provider.types import JsonObject
from provider.worker.activity_item import ActivityItem
from provider.worker.cancellation import CancellationToken
from provider.worker.core import (
    ACK_ATTEMPTS,
    UNREGISTERED_RETRY_MS,
    ActivityContext,
    Handler,
    WorkerCore,
)

T = TypeVar("T")


# -- the steps the flow asks its worker to perform ------------------------------


@dataclass(frozen=True)
class Ack:
    """hub.ack_work_item(token, completion); a TaskHubError comes back into the flow."""

    completion: JsonObject


@dataclass(frozen=True)
class Abandon:
    """hub.abandon_work_item(token, delay_ms=..., ignore_attempt=...)."""

    delay_ms: int | None
    ignore_attempt: bool


@dataclass(frozen=True)
class Pause:
    """A sleep between ack attempts (a stop does not cut it short)."""

    seconds: float


@dataclass(frozen=True)
class Work:
    """Run the handler while the item's lease is kept; the worker answers
    with an Outcome."""

    handler: Handler
    context: ActivityContext
    value: Any


@dataclass(frozen=True)
class Outcome:
    completion: JsonObject | None  # None: the work was cancelled
    lease_lost: bool


Step = Ack | Abandon | Pause | Work
Flow = Generator[Step, Any, T]


# -- the items in flight, and the stop ----------------------------------------


@dataclass
class Claim:
    """One running item; its state moves running -> acking | given_back once."""

    item: ActivityItem
    token: CancellationToken = field(default_factory=CancellationToken)
    state: str = "running"


class InFlight:
    """The items a worker runs now. A stop closes it: an item fetched after
    that is given back unrun, and those running are handed to the stop to
    give back. Its lock is held only for a few assignments (never across a
    call or an await), so both workers use it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[str, Claim] = {}
        self._closed = False

    def __len__(self) -> int:
        return len(self._claims)

    @property
    def closed(self) -> bool:
        return self._closed

    def open(self) -> None:
        with self._lock:
            self._closed = False

    def claim(self, item: ActivityItem) -> Claim | None:
        """The item's claim, or None when the worker is stopping."""
        with self._lock:
            if self._closed:
                return None
            claim = Claim(item)
            self._claims[item.lock_token] = claim
            return claim

    def release(self, claim: Claim) -> None:
        with self._lock:
            self._claims.pop(claim.item.lock_token, None)

    def to_ack(self, claim: Claim) -> bool:
        """The item's outcome is to be acked: False once the stop gave it back."""
        with self._lock:
            if claim.state != "running":
                return False
            claim.state = "acking"
            return True

    def close(self) -> list[Claim]:
        """Stop: no new claim; the running items, now the stop's to give back."""
        with self._lock:
            self._closed = True
            taken = [claim for claim in self._claims.values() if claim.state == "running"]
            for claim in taken:
                claim.state = "given_back"
            return taken


# -- the flow ---------------------------------------------------------------


def item_flow(core: WorkerCore, item: ActivityItem, in_flight: InFlight) -> Flow[None]:
    """Everything that happens to one fetched item."""
    if in_flight.closed:  # fetched while the worker stops: it never starts
        yield from give_back(core, item)
        return
    if item.body is None:
        core.unreadable(item)  # left as it is: its lease ends, then dead_letters
        return
    poisoned = core.poison_completion(item)
    if poisoned is not None:
        yield from ack(core, item, poisoned)
        core.stats.poisoned += 1
        return
    handler = core.handler_for(item)
    if handler is None:
        yield from abandon(core, item, delay_ms=UNREGISTERED_RETRY_MS, ignore_attempt=False)
        return
    claim = in_flight.claim(item)
    if claim is None:  # the stop came in since the look above
        yield from give_back(core, item)
        return
    core.stats.started += 1
    try:
        outcome: Outcome = yield Work(handler, core.context(item, claim.token), item.input())
    finally:
        in_flight.release(claim)
    if not in_flight.to_ack(claim):
        return  # the stop gave it back
    if outcome.lease_lost or outcome.completion is None:
        # Lease gone: another worker owns the item now. Ack nothing.
        core.stats.lost += 1
        return
    if (yield from ack(core, item, outcome.completion)):
        core.count(outcome.completion)


def ack(core: WorkerCore, item: ActivityItem, completion: JsonObject) -> Flow[bool]:
    """The ack, with the workers' one retry policy (WorkerCore.ack_retry_delay_s)."""
    for attempt in range(ACK_ATTEMPTS):  # bounded here; the policy may stop sooner
        try:
            yield Ack(completion)
            return True
        except TaskHubError as error:
            delay_s = core.ack_retry_delay_s(item, error, attempt)
            if delay_s is None:
                return False
            yield Pause(delay_s)
    return False


def abandon(
    core: WorkerCore, item: ActivityItem, *, delay_ms: int | None, ignore_attempt: bool
) -> Flow[None]:
    try:
        yield Abandon(delay_ms, ignore_attempt)
    except TaskHubError as error:
        core.abandon_failed(item, error)


def give_back(core: WorkerCore, item: ActivityItem) -> Flow[None]:
    """Not this item's fault (the worker stops): the fetch does not count as
    an attempt."""
    yield from abandon(core, item, delay_ms=None, ignore_attempt=True)
    core.stats.given_back += 1


def given_back_on_stop(core: WorkerCore, claim: Claim) -> Flow[None]:
    """A running item the stop took (InFlight.close): its handler is
    cancelled, the item given back."""
    claim.token.cancel("worker shutting down")
    yield from give_back(core, claim.item)
