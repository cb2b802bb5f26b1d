"""The slots' side of push wakeups, without a database: a SlotBoard driven
by hand as its listener would drive it (`listening` is a new LISTEN
connection, `notified` a notification); and the listener, unstarted, telling
its subscriber.

The rules under test:
* A slot sleeps only when the server was told "waiting" before its fetch
  began. Work committed between a notification (which clears the server's
  flag) and the next "waiting" is announced to nobody, so every slot whose
  fetch began in that window looks once more; with the workers of a process
  sharing one listener, the slot that told the server may not be able to run
  that work (another tag, another worker).
* A notification wakes one sleeping slot of each worker, not all of them; a
  slot that found work wakes one more."""

from __future__ import annotations

import threading
import time

from devkit.waiting import wait_until
from provider import TaskHubConfig
from provider.client.wakeups import Wakeups
from provider.errors import TaskHubError
from provider.worker.slots import SlotBoard, SlotGroup

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


def asleep(slots: SlotGroup) -> int:
    """How many slots of the group sleep until woken (or their poll)."""
    with slots._board._lock:
        return len(slots._sleepers)


def awaiting_the_teller(board: SlotBoard) -> int:
    """How many slots wait for the slot that is telling the server."""
    with board._lock:
        return len(board._awaiting_announcement)


def listening() -> SlotBoard:
    board = SlotBoard()
    board.listening(LISTENER_PID)
    return board


def waited_s(slots: SlotGroup, flag: ServerFlag, timeout_s: float) -> float:
    ticket = slots.ticket()
    started = time.monotonic()
    slots.wait_for_work(ticket, flag, timeout_s)
    return time.monotonic() - started


class Sleeping:
    """A slot of `slots` that took its ticket, found nothing, and waits now."""

    def __init__(self, slots: SlotGroup, flag: ServerFlag, timeout_s: float = 5.0) -> None:
        self.woke_after: list[float] = []
        ticket = slots.ticket()

        def wait() -> None:
            started = time.monotonic()
            slots.wait_for_work(ticket, flag, timeout_s)
            self.woke_after.append(time.monotonic() - started)

        self.thread = threading.Thread(target=wait, daemon=True)
        self.thread.start()

    def woke(self, within_s: float = 1.0) -> bool:
        self.thread.join(within_s)
        return bool(self.woke_after) and self.woke_after[0] < within_s + 0.5


def test_the_first_idle_slot_tells_the_server_and_looks_again() -> None:
    board, flag = listening(), ServerFlag()
    slots = board.group()
    # Its fetch began before the server knew: it returns at once, to fetch again.
    assert waited_s(slots, flag, 5.0) < 0.5
    assert flag.calls == [(LISTENER_PID, True)]
    # Now the server knows: the next empty fetch sleeps through its poll.
    assert waited_s(slots, flag, 0.3) >= 0.3
    assert flag.calls == [(LISTENER_PID, True)]


def test_a_notification_wakes_one_slot_of_each_worker() -> None:
    board, flag = listening(), ServerFlag()
    gpu, cpu = board.group(), board.group()
    waited_s(gpu, flag, 5.0)  # tells the server
    sleeping = [Sleeping(gpu, flag), Sleeping(gpu, flag), Sleeping(cpu, flag)]
    wait_until(lambda: (asleep(gpu), asleep(cpu)) == (2, 1), timeout_s=2, interval_s=0.001)
    board.notified()
    woken = [slot.woke(0.5) for slot in sleeping]
    assert woken.count(True) == 2 and woken[2], woken  # one of gpu's, and cpu's one
    # The gpu slot that woke found work: it wakes the next.
    gpu.found_work()
    assert all(slot.woke(0.5) for slot in sleeping)


def test_a_slot_whose_fetch_began_before_another_slot_told_the_server_looks_again() -> None:
    board, flag = listening(), ServerFlag()
    gpu, cpu = board.group(), board.group()
    waited_s(gpu, flag, 5.0)
    board.notified()  # the flag is clear; both workers' slots fetch and find nothing
    teller_ticket, other_ticket = gpu.ticket(), cpu.ticket()
    flag.release.clear()  # hold the teller inside set_wakeup_waiting
    flag.entered.clear()
    teller = threading.Thread(target=gpu.wait_for_work, args=(teller_ticket, flag, 5.0))
    teller.start()
    assert flag.entered.wait(2)
    # Work for the other worker was committed before the server knew: unannounced.
    other_waited: list[float] = []

    def other() -> None:
        started = time.monotonic()
        cpu.wait_for_work(other_ticket, flag, 5.0)
        other_waited.append(time.monotonic() - started)

    other_slot = threading.Thread(target=other)
    other_slot.start()
    wait_until(lambda: awaiting_the_teller(board) or other_waited, timeout_s=2, interval_s=0.001)
    assert other_waited == []  # it waits for the teller, it does not tell twice
    flag.release.set()
    other_slot.join(2)
    teller.join(2)
    assert other_waited and other_waited[0] < 1.0, "it must look again, not sleep its poll"
    assert len(flag.calls) == 2


def test_a_notification_during_the_announcement_leaves_the_server_unknowing() -> None:
    board, flag = listening(), ServerFlag()
    slots = board.group()
    flag.release.clear()
    flag.entered.clear()
    teller = threading.Thread(target=waited_s, args=(slots, flag, 5.0))
    teller.start()
    assert flag.entered.wait(2)
    board.notified()  # the flag the teller set was cleared at once by a notifier
    flag.release.set()
    teller.join(2)
    # So the next slot to find nothing tells the server again.
    assert waited_s(slots, flag, 5.0) < 0.5
    assert len(flag.calls) == 2


def test_a_failed_announcement_leaves_the_slot_polling() -> None:
    board = listening()
    slots = board.group()

    def refuse(pid: int, waiting: bool) -> None:
        raise TaskHubError("set_wakeup_waiting", "connection lost")

    ticket = slots.ticket()
    started = time.monotonic()
    slots.wait_for_work(ticket, refuse, 0.3)
    assert time.monotonic() - started >= 0.3  # polled
    flag = ServerFlag()
    assert waited_s(slots, flag, 5.0) < 0.5  # the next slot tells the server
    assert flag.calls == [(LISTENER_PID, True)]


def test_without_a_listening_connection_slots_poll_and_a_stop_wakes_them() -> None:
    slots, flag = SlotBoard().group(), ServerFlag()
    assert waited_s(slots, flag, 0.2) >= 0.2
    assert flag.calls == []
    sleeping = Sleeping(slots, flag, timeout_s=5.0)
    wait_until(lambda: asleep(slots) == 1, timeout_s=2, interval_s=0.001)
    slots.wake_all()
    assert sleeping.woke(0.5)


def test_the_listener_tells_its_subscribers_and_one_board_serves_its_workers() -> None:
    """What the LISTEN thread reports reaches the board: a new connection (the
    slots then tell the server), a notification, a lost connection (the slots
    then poll). Every worker of the process gets the same board."""
    listener = Wakeups(TaskHubConfig(url="postgresql://unused", schema="s"), "worker", None)
    board = SlotBoard.of(listener)
    assert SlotBoard.of(listener) is board
    slots, flag = board.group(), ServerFlag()
    listener._listening(LISTENER_PID)
    assert waited_s(slots, flag, 5.0) < 0.5
    assert flag.calls == [(LISTENER_PID, True)]
    sleeping = Sleeping(slots, flag)
    wait_until(lambda: asleep(slots) == 1, timeout_s=2, interval_s=0.001)
    listener._notified()
    assert sleeping.woke()
    listener._lost()
    flag = ServerFlag()
    assert waited_s(slots, flag, 0.2) >= 0.2  # nobody listens: it polls
    assert flag.calls == []
