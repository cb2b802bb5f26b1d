"""slot_loop and session_heartbeat (provider/worker/slot_loop.py) as pure
generators: each row feeds a step's result in and names the step that must
come next; the stop comes in during a row's step (STOP). No hub, no
thread, a clock of the test's own; the slot board is a real SlotGroup (no
listener: its tickets show each wakeup the loop caused). Each face
performing these steps: tests/unit/test_worker_protocol.py,
test_async_worker_protocol.py, test_worker_push_wakeups.py."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from provider import RetryableError, TagFilter, TaskHubConfig
from provider.types import WorkItemLease
from provider.worker.activity_item import ActivityItem
from provider.worker.core import BATCH_POLL_S, WorkerCore, WorkerOptions
from provider.worker.slot_loop import (
    SESSION_CLEANUP_S,
    CleanupSessions,
    Fetch,
    Process,
    RenewSessions,
    Rest,
    WaitForWork,
    session_heartbeat,
    slot_loop,
)
from provider.worker.slots import SlotBoard, SlotGroup, Ticket
from tests.unit.flow_script import STOP, Row, StopFlag, play, stopped

FETCHED_AT = 7.5  # what the test's clock says when each fetch begins
# The idle polls: 10 ms doubled up to 40 ms; the fetch errors' back-off from 100 ms.
OPTIONS: WorkerOptions = {"idle_poll_ms": 10, "max_idle_poll_ms": 40, "max_error_backoff_ms": 400}


def worker_core(**options: Any) -> WorkerCore:
    settings = dict(OPTIONS, **options)
    return WorkerCore(TaskHubConfig(url="postgresql://unused"), **settings)


FETCH = Fetch(30_000, None, 30_000, TagFilter.default_only())  # as worker_core() asks


def leased(n: int) -> WorkItemLease:
    body = {"instance": "i", "execution_id": 1, "id": n, "name": "Echo", "input": json.dumps(n)}
    return WorkItemLease({"ActivityExecute": body}, f"lock_{n}", 1)


def serves(n: int) -> Process:
    return Process(ActivityItem.fetched(leased(n), FETCHED_AT))


def down() -> RetryableError:
    return RetryableError("fetch_work_item", "server restarting", "57P03")


def backs_off(ceiling_s: float) -> Callable[[Any], bool]:
    """Rest after a failed fetch: the error back-off, with its jitter."""
    return lambda step: isinstance(step, Rest) and ceiling_s / 2 <= step.seconds <= ceiling_s


# -- a slot without push wakeups: it polls ----------------------------------------


@dataclass(frozen=True)
class Case:
    script: list[Row]
    options: dict[str, Any] = field(default_factory=dict)


POLLING: dict[str, Case] = {
    "an empty queue: the poll doubles from idle_poll_ms to max_idle_poll_ms": Case(
        [
            (FETCH, None),
            (Rest(0.01), None),
            (FETCH, None),
            (Rest(0.02), None),
            (FETCH, None),
            (Rest(0.04), None),
            (FETCH, None),
            (Rest(0.04), STOP),
        ]
    ),
    "an item is served; then one brief poll, and the idle polls go on from the second": Case(
        [
            (FETCH, leased(1)),
            (serves(1), None),
            (FETCH, None),
            (Rest(BATCH_POLL_S), None),
            (FETCH, None),
            (Rest(0.02), STOP),
        ]
    ),
    "item after item: no poll between them": Case(
        [(FETCH, leased(1)), (serves(1), None), (FETCH, leased(2)), (serves(2), STOP)]
    ),
    "an item resets the idle polls": Case(
        [
            (FETCH, None),
            (Rest(0.01), None),
            (FETCH, None),
            (Rest(0.02), None),
            (FETCH, leased(1)),
            (serves(1), None),
            (FETCH, None),
            (Rest(BATCH_POLL_S), None),
            (FETCH, None),
            (Rest(0.02), STOP),
        ]
    ),
    "a failed fetch backs off, doubling, and a fetch that answers ends the back-off": Case(
        [
            (FETCH, down()),
            (backs_off(0.1), None),
            (FETCH, down()),
            (backs_off(0.2), None),
            (FETCH, None),
            (Rest(0.01), None),
            (FETCH, down()),
            (backs_off(0.1), STOP),
        ]
    ),
    "the back-off stops at max_error_backoff_ms": Case(
        [
            (FETCH, down()),
            (backs_off(0.1), None),
            (FETCH, down()),
            (backs_off(0.2), None),
            (FETCH, down()),
            (backs_off(0.4), None),
            (FETCH, down()),
            (backs_off(0.4), STOP),
        ]
    ),
    "the stop during a fetch: the slot serves what it fetched, then ends": Case(
        [(FETCH, stopped(leased(1))), (serves(1), None)]
    ),
    "the stop during an empty fetch: the slot still waits (stop cuts the wait short)": Case(
        [(FETCH, stopped(None)), (Rest(0.01), None)]
    ),
    "the fetch asks for the worker's lease, owner, session lease and tags": Case(
        [(Fetch(1_234, "w-1", 4_321, TagFilter.only("gpu")), STOP), (Rest(0.01), None)],
        {
            "lock_timeout_ms": 1_234,
            "owner_id": "w-1",
            "session_lock_timeout_ms": 4_321,
            "tags": TagFilter.only("gpu"),
        },
    ),
}


@pytest.mark.parametrize("case", POLLING.values(), ids=POLLING)
def test_a_polling_slot(case: Case) -> None:
    stop = StopFlag()
    loop = slot_loop(worker_core(**case.options), None, stop, clock=lambda: FETCHED_AT)
    play(loop, case.script, stop)


def test_a_stopped_worker_fetches_nothing() -> None:
    stop = StopFlag()
    stop.is_set = True
    play(slot_loop(worker_core(), None, stop), [], stop)


def test_a_bug_while_serving_is_logged_and_the_slot_serves_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = StopFlag()
    loop = slot_loop(worker_core(), None, stop, clock=lambda: FETCHED_AT)
    script: list[Row] = [
        (FETCH, leased(1)),
        (serves(1), KeyError("instance")),
        (FETCH, leased(2)),
        (serves(2), STOP),
    ]
    play(loop, script, stop)
    (record,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert getattr(record, "event", None) == "worker.item_unreadable"
    assert getattr(record, "lock_token", None) == "lock_1" and record.exc_info is not None


def test_a_failed_fetch_is_logged_with_its_sqlstate_and_pause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stop = StopFlag()
    play(slot_loop(worker_core(), None, stop), [(FETCH, down()), (backs_off(0.1), STOP)], stop)
    (record,) = caplog.records
    assert getattr(record, "event", None) == "worker.fetch_failed"
    assert getattr(record, "sqlstate", None) == "57P03"


# -- a slot with push wakeups: it waits on its group of the slot board ---------------


def board_group() -> SlotGroup:
    """A worker's group on a board with no listener: tickets and wakeups only."""
    return SlotBoard().group()


def test_an_empty_fetch_waits_on_the_board_with_the_ticket_taken_before_it() -> None:
    stop, slots = StopFlag(), board_group()
    script: list[Row] = [
        (FETCH, None),
        (WaitForWork(slots, Ticket(0, server_knew=False), 0.01, announce=True), None),
        (FETCH, None),
        (WaitForWork(slots, Ticket(0, server_knew=False), 0.02, announce=True), STOP),
    ]
    play(slot_loop(worker_core(), slots, stop), script, stop)


def test_work_found_after_a_wait_wakes_one_more_slot_and_item_after_item_does_not() -> None:
    stop, slots = StopFlag(), board_group()
    script: list[Row] = [
        (FETCH, None),
        (WaitForWork(slots, Ticket(0, False), 0.01, announce=True), None),
        (FETCH, leased(1)),  # found after a wait: the group's next slot is woken
        (serves(1), None),
        (FETCH, leased(2)),  # item after item: nobody is woken
        (serves(2), None),
        (FETCH, None),  # one brief poll before telling the server
        (WaitForWork(slots, Ticket(1, False), BATCH_POLL_S, announce=False), None),
        (FETCH, None),
        (WaitForWork(slots, Ticket(1, False), 0.02, announce=True), STOP),
    ]
    play(slot_loop(worker_core(), slots, stop, clock=lambda: FETCHED_AT), script, stop)


def test_a_failed_fetch_backs_off_without_the_board() -> None:
    stop, slots = StopFlag(), board_group()
    script: list[Row] = [(FETCH, down()), (backs_off(0.1), None), (FETCH, leased(1))]
    script += [(serves(1), STOP)]  # after an error, no wait: nobody else is woken
    play(slot_loop(worker_core(), slots, stop, clock=lambda: FETCHED_AT), script, stop)
    assert slots.ticket() == Ticket(0, server_knew=False)


# -- the session heartbeat ------------------------------------------------------------


class TickingClock:
    """Each reading is `step_s` later than the one before."""

    def __init__(self, step_s: float) -> None:
        self.now, self.step_s = 0.0, step_s

    def __call__(self) -> float:
        self.now += self.step_s
        return self.now


OWNER: dict[str, Any] = {
    "owner_id": "w-1",
    "session_lock_timeout_ms": 3_000,
    "session_idle_timeout_ms": 60_000,
}
EVERY_S = 1.0  # a third of the session lease
RENEW = RenewSessions("w-1", 3_000, 60_000)
NOW_AND_THEN = SESSION_CLEANUP_S * 0.4  # three clock readings go past the cleanup interval

HEARTBEATS: dict[str, list[Row]] = {
    "it renews every third of the session lease, and cleans up now and then": [
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (CleanupSessions(), 0),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), STOP),
    ],
    "a failed renewal is logged and the next one comes a third later": [
        (Rest(EVERY_S), None),
        (RENEW, RetryableError("renew_session_lock", "deadlock", "40P01")),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), STOP),
    ],
    "a failed cleanup is tried again with the next renewal": [
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (CleanupSessions(), RetryableError("cleanup_orphaned_sessions", "deadlock", "40P01")),
        (Rest(EVERY_S), None),
        (RENEW, 1),
        (CleanupSessions(), 0),
        (Rest(EVERY_S), STOP),
    ],
    "a stop during the wait ends it before a renewal": [(Rest(EVERY_S), STOP)],
    "a stop during a renewal ends it there": [(Rest(EVERY_S), None), (RENEW, stopped(1))],
}


@pytest.mark.parametrize("script", HEARTBEATS.values(), ids=HEARTBEATS)
def test_the_session_heartbeat(script: list[Row]) -> None:
    stop = StopFlag()
    heartbeat = session_heartbeat(worker_core(**OWNER), stop, clock=TickingClock(NOW_AND_THEN))
    play(heartbeat, script, stop)


def test_a_failed_renewal_is_logged_with_its_sqlstate(caplog: pytest.LogCaptureFixture) -> None:
    stop = StopFlag()
    script: list[Row] = [
        (Rest(EVERY_S), None),
        (RENEW, RetryableError("renew_session_lock", "deadlock", "40P01")),
        (Rest(EVERY_S), STOP),
    ]
    play(session_heartbeat(worker_core(**OWNER), stop), script, stop)
    (record,) = caplog.records
    assert getattr(record, "event", None) == "worker.session_heartbeat_failed"
    assert getattr(record, "sqlstate", None) == "40P01"
