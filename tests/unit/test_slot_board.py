"""The wakeup slots (provider/worker/slots.py) beyond test_wakeup_protocol:
one board per listener, made and subscribed once and gone with its
listener; what a ticket records; a slot woken since its ticket looking again
at once; which sleeping slot a notification wakes (the latest; never one
that already gave up); a lost listener making slots poll until a new
connection listens; wake_all and a closed group; and asyncio slots, which
sleep without blocking their loop. Slots sleep up to 5 s; each test wakes
them long before, so a wakeup that does not come fails the test."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Callable

from devkit.waiting import wait_until, wait_until_async
from provider.errors import TaskHubError
from provider.worker.slots import SlotBoard, SlotGroup, _Sleeper
from tests.unit.fakes import LISTENER_PID, FakeListener
from tests.unit.test_wakeup_protocol import ServerFlag, asleep

NEW_PID = 5151
LONG_S = 5.0  # a poll no test waits for


class SleepingSlot:
    """A slot of `group` that found nothing and now waits, in its own thread
    (test_wakeup_protocol's Sleeping, with `announce`)."""

    def __init__(self, group: SlotGroup, flag: ServerFlag, *, announce: bool = True) -> None:
        ticket = group.ticket()
        self.thread = threading.Thread(
            target=group.wait_for_work, args=(ticket, flag, LONG_S), kwargs={"announce": announce}
        )
        self.thread.start()

    def woke(self, within_s: float = 1.0) -> bool:
        self.thread.join(within_s)
        return not self.thread.is_alive()


def told_server(board: SlotBoard, group: SlotGroup, flag: ServerFlag) -> None:
    """The first idle slot tells the server it waits (and returns to fetch again)."""
    group.wait_for_work(group.ticket(), flag, LONG_S)
    assert flag.calls[-1] == (board._pid, True)


def put_to_sleep(group: SlotGroup, flag: ServerFlag, count: int = 1) -> list[SleepingSlot]:
    """`count` slots of `group` asleep, in that order."""
    slots: list[SleepingSlot] = []
    for _ in range(count):
        slots.append(SleepingSlot(group, flag))
        wait_until(sleeping(group, len(slots)), timeout_s=2, interval_s=0.001)
    return slots


def sleeping(group: SlotGroup, count: int) -> Callable[[], bool]:
    return lambda: asleep(group) == count


def test_the_board_of_a_listener_is_made_and_subscribed_once() -> None:
    listener = FakeListener()
    board = SlotBoard.of(listener)
    assert SlotBoard.of(listener) is board
    assert listener.subscribers == [board]
    assert SlotBoard.of(FakeListener()) is not board  # each listener has its own


def test_a_board_subscribed_to_a_listening_listener_announces_with_its_pid() -> None:
    listener, flag = FakeListener(pid=LISTENER_PID), ServerFlag()
    group = SlotBoard.of(listener).group()
    group.wait_for_work(group.ticket(), flag, 1.0)
    assert flag.calls == [(LISTENER_PID, True)]


def test_a_board_goes_away_with_its_listener() -> None:
    listener = FakeListener()
    board = weakref.ref(SlotBoard.of(listener))
    before = len(SlotBoard._boards)
    del listener
    gc.collect()
    assert board() is None
    assert len(SlotBoard._boards) == before - 1


def test_a_ticket_says_whether_the_server_knew_the_listener_waits() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    group = board.group()
    assert group.ticket().server_knew is False
    told_server(board, group, flag)
    assert group.ticket().server_knew is True
    board.notified()  # the server cleared its flag when it notified
    assert group.ticket().server_knew is False
    told_server(board, group, flag)
    board.listening(NEW_PID)  # a new connection: its flag is not set
    assert group.ticket().server_knew is False


def test_a_slot_woken_since_its_ticket_looks_again_without_waiting() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    group = board.group()
    told_server(board, group, flag)
    for wake in (board.notified, group.found_work, group.wake_all):
        ticket = group.ticket()
        wake()  # while this slot was fetching
        group.wait_for_work(ticket, flag, LONG_S)  # returns at once: fetch again
        assert asleep(group) == 0
    assert len(flag.calls) == 1  # and none of them told the server again


def test_a_notification_wakes_the_slot_that_slept_last() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    group = board.group()
    told_server(board, group, flag)
    first, last = put_to_sleep(group, flag, 2)
    board.notified()
    assert last.woke()
    assert not first.woke(0.01) and asleep(group) == 1
    group.wake_all()
    assert first.woke()


def test_a_slot_that_gave_up_waiting_is_forgotten_so_no_wakeup_is_lost_on_it() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    group = board.group()
    told_server(board, group, flag)
    (sleeper,) = put_to_sleep(group, flag)
    group.wait_for_work(group.ticket(), flag, 0.005)  # slept last, polled, left
    assert asleep(group) == 1
    board.notified()
    assert sleeper.woke()


def test_without_announce_a_slot_sleeps_instead_of_telling_the_server() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    group = board.group()
    sleeper = SleepingSlot(group, flag, announce=False)  # it just ran an item
    wait_until(sleeping(group, 1), timeout_s=2, interval_s=0.001)
    assert flag.calls == []
    group.found_work()
    assert sleeper.woke()


def test_a_lost_listener_makes_slots_poll_until_a_new_connection_listens() -> None:
    listener = FakeListener(pid=LISTENER_PID)
    board, flag = SlotBoard.of(listener), ServerFlag()
    group = board.group()
    listener.lose()  # before any slot told the server it waits
    # Nobody listens: a slot does not tell the server (for a connection that
    # is gone), it sleeps its poll.
    (sleeper,) = put_to_sleep(group, flag)
    assert flag.calls == []
    listener.listen(NEW_PID)  # every slot looks at what came while nobody listened
    assert sleeper.woke()
    group.wait_for_work(group.ticket(), flag, LONG_S)  # and one tells the new connection's
    assert flag.calls == [(NEW_PID, True)]


def test_wake_all_wakes_every_slot_of_every_worker() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    gpu, cpu = board.group(), board.group()
    told_server(board, gpu, flag)
    sleeping = [*put_to_sleep(gpu, flag, 2), *put_to_sleep(cpu, flag, 1)]
    board.wake_all()
    assert all(slot.woke() for slot in sleeping)
    assert asleep(gpu) == asleep(cpu) == 0


def test_closing_a_group_wakes_its_slots_and_takes_it_off_the_board() -> None:
    board, flag = SlotBoard(), ServerFlag()
    board.listening(LISTENER_PID)
    leaving, staying = board.group(), board.group()
    told_server(board, leaving, flag)
    (sleeper,) = put_to_sleep(leaving, flag)
    leaving.close()
    assert sleeper.woke()
    closed_ticket, open_ticket = leaving.ticket(), staying.ticket()
    board.notified()
    assert leaving.ticket().generation == closed_ticket.generation  # no more wakeups
    assert staying.ticket().generation == open_ticket.generation + 1


def test_an_asyncio_slot_announces_then_sleeps_without_blocking_its_loop() -> None:
    board = SlotBoard()
    board.listening(LISTENER_PID)
    group = board.group()
    told: list[tuple[int, bool]] = []

    async def set_waiting(pid: int, waiting: bool) -> None:
        told.append((pid, waiting))

    async def main() -> None:
        await group.wait_for_work_async(group.ticket(), set_waiting, LONG_S)  # announces
        slot = asyncio.create_task(group.wait_for_work_async(group.ticket(), set_waiting, LONG_S))
        # This loop keeps running while the slot sleeps: it sees it asleep...
        await wait_until_async(lambda: asleep(group) == 1, timeout_s=2, interval_s=0.001)
        # ...and the listening thread's notification, from outside the loop, wakes it.
        threading.Thread(target=board.notified).start()
        await asyncio.wait_for(slot, 1.0)

    asyncio.run(main())
    assert told == [(LISTENER_PID, True)]


def test_an_asyncio_slot_whose_announcement_fails_polls_and_the_next_one_tells() -> None:
    board = SlotBoard()
    board.listening(LISTENER_PID)
    group = board.group()
    told: list[tuple[int, bool]] = []

    async def refuse(pid: int, waiting: bool) -> None:
        raise TaskHubError("set_wakeup_waiting", "connection lost")

    async def set_waiting(pid: int, waiting: bool) -> None:
        told.append((pid, waiting))

    async def main() -> None:
        failed = asyncio.create_task(group.wait_for_work_async(group.ticket(), refuse, LONG_S))
        # It polls: it sleeps, the server untold.
        await wait_until_async(lambda: asleep(group) == 1, timeout_s=2, interval_s=0.001)
        await group.wait_for_work_async(group.ticket(), set_waiting, LONG_S)  # tells, at once
        group.wake_all()
        await asyncio.wait_for(failed, 1.0)

    asyncio.run(main())
    assert told == [(LISTENER_PID, True)]


def test_waking_a_sleeper_whose_loop_has_closed_is_harmless() -> None:
    loop = asyncio.new_event_loop()
    sleeper = _Sleeper(loop)
    loop.close()
    sleeper.wake()  # a worker's loop ended while the listener still had its slot
    assert sleeper.event.is_set()
