"""The pace of wait_for_completion (provider/client/completion_wait.py), its
steps driven by hand: what it asks for after each read. No database: the
reads are made up; tests/client/test_wait_for_completion.py runs the wait
on a hub."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from provider.client.completion_wait import (
    IDLE_CHECK_S,
    WAIT_POLLING,
    Arm,
    Ear,
    Look,
    Pause,
    Progress,
    WaitPlan,
    waiting,
)
from provider.errors import PermanentError, WaitTimeout
from provider.tracing import WaitSpan
from provider.types import InstanceStatus, InstanceStatusName

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def progress(status: InstanceStatusName = "Running", queued: int = 0) -> Progress:
    instance = InstanceStatus("order-1", status, "Order", "1.0.0", 1, None, NOW, NOW)
    return Progress(instance, queued)


def plan(ear: Ear | None, timeout_s: float = 60.0) -> WaitPlan:
    return waiting(timeout_s, ear, WaitSpan("orders", "order-1"))


def paused(wait: WaitPlan, sent: object) -> Pause:
    """The step the wait asks for after `sent`: a pause."""
    step = wait.send(sent)
    assert isinstance(step, Pause), step
    return step


def listening_ear(pid: int = 4242) -> Ear:
    ear = Ear("orders")
    ear.listening(pid)
    return ear


def test_without_a_listener_it_polls_on_the_ramp_as_before() -> None:
    wait = plan(None)
    assert next(wait) == Look()
    pauses = []
    for _ in range(8):
        pauses.append(paused(wait, progress(queued=0)))  # nothing queued: no matter
        assert wait.send(False) == Look()
    assert [p.seconds for p in pauses] == [WAIT_POLLING.pause_s(n) for n in range(1, 9)]
    assert [p.heard for p in pauses] == [None] * 8
    assert pauses[-1].seconds == 1.0


def test_listening_with_nothing_queued_it_waits_for_a_wakeup() -> None:
    ear = listening_ear()
    wait = plan(ear)
    assert next(wait) == Arm(4242)  # told "waiting" before the read
    assert wait.send(True) == Look()
    idle = wait.send(progress(queued=0))
    assert idle == Pause(IDLE_CHECK_S, ear.now()[0])
    # No wakeup within IDLE_CHECK_S: one read all the same, the hub told
    # already (nothing heard since), so no Arm.
    assert wait.send(False) == Look()
    assert paused(wait, progress(queued=0)).seconds == IDLE_CHECK_S


def test_a_turn_due_is_read_on_the_ramp_and_an_end_returns() -> None:
    wait = plan(listening_ear())
    next(wait)
    wait.send(True)
    ramp = [paused(wait, progress(queued=1))]
    assert wait.send(False) == Look()
    ramp.append(paused(wait, progress(queued=1)))
    assert [p.seconds for p in ramp] == [0.02, 0.04]
    assert [p.heard for p in ramp] == [None, None]  # wakeups do not cut a ramp short
    wait.send(False)
    with pytest.raises(StopIteration) as done:
        wait.send(progress("Completed"))
    assert done.value.value.status == "Completed"


def test_on_a_busy_hub_wakeups_that_find_nothing_are_followed_no_faster_than_a_poll() -> None:
    ear = listening_ear()
    wait = plan(ear)
    next(wait)
    wait.send(True)
    assert paused(wait, progress(queued=0)).heard is not None
    followed = []
    for _ in range(9):
        ear.notified()  # another instance's message: the hub's flag is cleared
        step = wait.send(True)  # the idle pause ended by the wakeup
        if isinstance(step, Pause):  # held back before the read
            followed.append(step.seconds)
            step = wait.send(False)
        assert step == Arm(4242)  # told again: the wakeup cleared the flag
        assert wait.send(True) == Look()
        assert paused(wait, progress(queued=0)).seconds == IDLE_CHECK_S
    # The first at once, then the poll's ramp: at most a read a second.
    assert followed == [WAIT_POLLING.pause_s(n) for n in range(1, 9)]
    # A wakeup after which a turn is due for it starts the count again.
    ear.notified()
    assert isinstance(wait.send(True), Pause)  # the tenth in a row: held back
    assert wait.send(False) == Arm(4242)
    assert wait.send(True) == Look()
    assert wait.send(progress(queued=1)) == Pause(0.02)  # its turn: the ramp
    assert wait.send(False) == Look()  # nothing heard since the hub was told
    assert paused(wait, progress(queued=0)).seconds == IDLE_CHECK_S
    ear.notified()
    assert wait.send(True) == Arm(4242)  # read at once again


def test_a_lost_listener_makes_it_poll_until_the_listener_is_back() -> None:
    ear = listening_ear()
    wait = plan(ear)
    next(wait)
    wait.send(True)
    wait.send(progress(queued=0))
    ear.lost()
    assert wait.send(True) == Look()  # no pid: no Arm, a plain read
    poll = paused(wait, progress(queued=0))
    assert poll.seconds == 0.02 and poll.heard == ear.now()[0]  # the listener's return ends it
    ear.listening(5151)
    assert wait.send(True) == Arm(5151)


def test_a_refused_waiting_makes_every_wait_of_the_client_poll() -> None:
    ear = listening_ear()
    ear.refused(PermanentError("wait_for_completion", "permission denied", "42501"))
    wait = plan(ear)
    assert next(wait) == Look()
    assert wait.send(progress(queued=0)) == Pause(0.02)


def test_the_timeout_bounds_every_pause() -> None:
    wait = plan(listening_ear(), timeout_s=0.5)
    next(wait)
    wait.send(True)
    assert paused(wait, progress(queued=0)).seconds <= 0.5
    timed_out = plan(None, timeout_s=0.0)
    next(timed_out)
    with pytest.raises(WaitTimeout, match=r"still Running after 0\.0 s"):
        timed_out.send(progress())
