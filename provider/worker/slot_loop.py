"""A worker's slot and its session heartbeat, written once for both workers.

A slot fetches an item, serves it (its flow: provider/worker/item_flow.py)
and fetches again. When the queue is empty it waits: on the slot board
(provider/worker/slots.py) while the worker has push wakeups, else for a
poll that doubles from idle_poll_ms; after a failed fetch it backs off. A
worker with an owner_id also renews its sessions every third of their
lease. Both are generators of steps (provider/worker/flows.py): the
threaded worker performs them by calls, on a thread each; the asyncio
worker by awaits, in a task each. A stop ends both at their next look at
`stopping`; every wait they ask for ends at once on a stop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from provider.errors import TaskHubError
from provider.types import TagFilter, WorkItemLease
from provider.worker.activity_item import ActivityItem
from provider.worker.core import BATCH_POLL_S, WorkerCore
from provider.worker.slots import SlotGroup, Ticket

# After this long, a heartbeat also clears the sessions of workers gone.
SESSION_CLEANUP_S = 60.0


# -- the steps a slot or the heartbeat asks its worker to perform -------------------


@dataclass(frozen=True)
class Fetch:
    """hub.fetch_work_item(lock_timeout_ms, owner_id=..., ...): its lease or
    None comes back; a TaskHubError comes back into the loop."""

    lock_timeout_ms: int
    owner_id: str | None
    session_lock_timeout_ms: int
    tags: TagFilter


@dataclass(frozen=True)
class Rest:
    """A sleep that a stop cuts short (item_flow's Pause is one it does not)."""

    seconds: float


@dataclass(frozen=True)
class WaitForWork:
    """The fetch after `ticket` found nothing: slots.wait_for_work(ticket,
    hub.set_wakeup_waiting, idle_s, announce=...), or its asyncio twin."""

    slots: SlotGroup
    ticket: Ticket
    idle_s: float
    announce: bool


@dataclass(frozen=True)
class Process:
    """Serve the item: drive item_flow over it. Whatever it raises comes
    back into the loop (a bug of ours: logged, and the slot serves on)."""

    item: ActivityItem


@dataclass(frozen=True)
class RenewSessions:
    """hub.renew_session_lock([owner_id], extend_ms, idle_timeout_ms)."""

    owner_id: str
    extend_ms: int
    idle_timeout_ms: int


@dataclass(frozen=True)
class CleanupSessions:
    """hub.cleanup_orphaned_sessions()."""


SlotStep = Fetch | Rest | WaitForWork | Process
HeartbeatStep = Rest | RenewSessions | CleanupSessions
LoopStep = SlotStep | HeartbeatStep  # what a worker's `perform` is asked

Stopping = Callable[[], bool]  # the worker's stop flag (its Event's is_set)
Clock = Callable[[], float]  # monotonic seconds


# -- the slot ----------------------------------------------------------------------


def slot_loop(
    core: WorkerCore,
    slots: SlotGroup | None,
    stopping: Stopping,
    clock: Clock = time.monotonic,
) -> Generator[SlotStep, Any, None]:
    """One slot, until the worker stops. `slots`: the worker's group on the
    slot board (None: no push wakeups, the slot polls)."""
    idle_fetches = fetch_errors = 0  # in a row, before this fetch
    waited = False  # this fetch follows a wait: found work may be a wakeup's
    worked = False  # the slot's last fetch leased an item
    fetch = Fetch(core.lock_timeout_ms, core.owner_id, core.session_lock_timeout_ms, core.tags)
    while not stopping():
        ticket = slots.ticket() if slots is not None else None  # before the fetch
        fetched_at = clock()  # the lease keeper counts the lease from here
        try:
            lease: WorkItemLease | None = yield fetch
            if lease is None:
                # Right after an item, poll once, briefly, before telling the
                # server: work that trickles in is fetched in batches, not
                # notified one item at a time.
                if worked:
                    yield _wait(slots, ticket, BATCH_POLL_S, announce=False)
                else:
                    idle_s = core.idle_backoff.pause_s(idle_fetches + 1)
                    yield _wait(slots, ticket, idle_s, announce=True)
                waited, worked = True, False
        except TaskHubError as error:
            fetch_errors += 1
            pause_s = core.error_backoff.pause_s(fetch_errors)
            core.fetch_failed(error, pause_s)
            yield Rest(pause_s)
            continue
        fetch_errors = 0
        if lease is None:
            idle_fetches += 1
            continue
        idle_fetches = 0
        if slots is not None and waited:
            # Woken, and there was work: there may be more, bring in the next
            # slot. A slot going from item to item does not: it would only
            # wake others to find nothing.
            slots.found_work()
        waited, worked = False, True
        item = ActivityItem.fetched(lease, fetched_at)
        try:
            yield Process(item)
        except Exception:
            core.cannot_process(item)


def _wait(
    slots: SlotGroup | None, ticket: Ticket | None, idle_s: float, *, announce: bool
) -> SlotStep:
    """Nothing to do: wait for a wakeup (or poll after idle_s); without
    push wakeups, poll after idle_s."""
    if slots is None or ticket is None:
        return Rest(idle_s)
    return WaitForWork(slots, ticket, idle_s, announce)


# -- the session heartbeat ----------------------------------------------------------


def session_heartbeat(
    core: WorkerCore, stopping: Stopping, clock: Clock = time.monotonic
) -> Generator[HeartbeatStep, Any, None]:
    """Renew the worker's sessions every third of their lease, through
    errors (logged), until the worker stops; clear orphaned sessions now
    and then. Only a worker with an owner_id runs it."""
    assert core.owner_id is not None
    renew = RenewSessions(core.owner_id, core.session_lock_timeout_ms, core.session_idle_timeout_ms)
    interval_s = core.session_lock_timeout_ms / 3000
    last_cleanup = clock()
    while not stopping():
        yield Rest(interval_s)
        if stopping():
            return
        try:
            yield renew
            if clock() - last_cleanup > SESSION_CLEANUP_S:
                yield CleanupSessions()
                last_cleanup = clock()
        except TaskHubError as error:
            core.heartbeat_failed(error)
