"""The slots' side of push wakeups, without a database: a Wakeups whose
listening thread is not started, driven by hand (`_listening` is a new
LISTEN connection, `_woken` a notification).

The rule under test: a slot sleeps only when the server was told "waiting"
before its fetch began. Work committed between a wakeup (which clears the
server's flag) and the next "waiting" is announced to nobody, so every slot
whose fetch began in that window must look once more; with the workers of a
process sharing one listener, the slot that told the server may not be able
to run that work (another tag, another worker)."""

from __future__ import annotations

import threading
import time

from provider import TaskHubConfig
from provider.client.wakeups import Wakeups

LISTENER_PID = 4242


class ServerFlag:
    """set_wakeup_waiting that records its calls and can be held."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []
        self.release = threading.Event()
        self.release.set()
        self.entered = threading.Event()

    def __call__(self, pid: int, waiting: bool) -> None:
        self.entered.set()
        assert self.release.wait(5)
        self.calls.append((pid, waiting))


def listening() -> Wakeups:
    wakeups = Wakeups(TaskHubConfig(url="postgresql://unused", schema="s"))
    wakeups._listening(LISTENER_PID)
    return wakeups


def waited_s(wakeups: Wakeups, flag: ServerFlag, timeout_s: float) -> float:
    ticket = wakeups.ticket()
    started = time.monotonic()
    wakeups.wait_for_work(ticket, flag, timeout_s)
    return time.monotonic() - started


def test_the_first_idle_slot_tells_the_server_and_looks_again() -> None:
    wakeups, flag = listening(), ServerFlag()
    # Its fetch began before the server knew: it returns at once, to fetch again.
    assert waited_s(wakeups, flag, 5.0) < 0.5
    assert flag.calls == [(LISTENER_PID, True)]
    # Now the server knows: the next empty fetch sleeps through its poll.
    assert waited_s(wakeups, flag, 0.3) >= 0.3
    assert flag.calls == [(LISTENER_PID, True)]


def test_a_wakeup_ends_the_sleep_and_the_server_is_told_again() -> None:
    wakeups, flag = listening(), ServerFlag()
    waited_s(wakeups, flag, 5.0)
    ticket = wakeups.ticket()
    sleeper = threading.Thread(target=wakeups.wait_for_work, args=(ticket, flag, 5.0))
    started = time.monotonic()
    sleeper.start()
    time.sleep(0.1)
    wakeups._woken()  # a notification: the notifier cleared the flag
    sleeper.join(2)
    assert time.monotonic() - started < 1.0
    waited_s(wakeups, flag, 5.0)
    assert flag.calls == [(LISTENER_PID, True)] * 2


def test_a_slot_whose_fetch_began_before_another_slot_told_the_server_looks_again() -> None:
    wakeups, flag = listening(), ServerFlag()
    waited_s(wakeups, flag, 5.0)
    wakeups._woken()  # the flag is clear; both slots fetch and find nothing
    teller_ticket, other_ticket = wakeups.ticket(), wakeups.ticket()
    flag.release.clear()  # hold the teller inside set_wakeup_waiting
    flag.entered.clear()
    teller = threading.Thread(target=wakeups.wait_for_work, args=(teller_ticket, flag, 5.0))
    teller.start()
    assert flag.entered.wait(2)
    # Work for the other slot was committed before the server knew: unannounced.
    other_waited: list[float] = []

    def other() -> None:
        started = time.monotonic()
        wakeups.wait_for_work(other_ticket, flag, 5.0)
        other_waited.append(time.monotonic() - started)

    other_slot = threading.Thread(target=other)
    other_slot.start()
    time.sleep(0.2)
    assert other_waited == []  # it waits for the teller, it does not tell twice
    flag.release.set()
    other_slot.join(2)
    teller.join(2)
    assert other_waited and other_waited[0] < 1.0, "it must look again, not sleep its poll"
    assert len(flag.calls) == 2


def test_a_failed_announcement_leaves_the_slot_polling() -> None:
    from provider.errors import TaskHubError

    wakeups = listening()

    def refuse(pid: int, waiting: bool) -> None:
        raise TaskHubError("set_wakeup_waiting", "connection lost")

    ticket = wakeups.ticket()
    started = time.monotonic()
    wakeups.wait_for_work(ticket, refuse, 0.3)
    assert time.monotonic() - started >= 0.3  # polled
    flag = ServerFlag()
    assert waited_s(wakeups, flag, 5.0) < 0.5  # the next slot tells the server
    assert flag.calls == [(LISTENER_PID, True)]


def test_without_a_listening_connection_slots_poll() -> None:
    wakeups = Wakeups(TaskHubConfig(url="postgresql://unused", schema="s"))
    flag = ServerFlag()
    assert waited_s(wakeups, flag, 0.2) >= 0.2
    assert flag.calls == []
