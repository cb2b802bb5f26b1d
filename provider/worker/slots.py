"""The slots' side of push wakeups: when an idle slot sleeps, when it tells
the server it waits, and which slot a notification wakes. No SQL: the
process's listening connection (`TaskHub.wakeups()`, client/wakeups.py)
reports its events to the SlotBoard of its listener, and the slots tell the
server "waiting" through their hub's set_wakeup_waiting.

    listener = hub.wakeups()                     # shared; release() when done
    slots = SlotBoard.of(listener).group()       # one per worker; close() when done
    while True:
        ticket = slots.ticket()                  # before the fetch
        if hub.fetch_work_item() is None:
            slots.wait_for_work(ticket, hub.set_wakeup_waiting, 0.5)
        else:
            slots.found_work()                   # more may be there: wake one more slot

The rules:
* A slot sleeps until woken only when the server was told "waiting" before
  its fetch began: work committed after that fetch is then announced.
  Otherwise it tells the server (or waits for the slot telling it) and
  fetches once more.
* A notification wakes one sleeping slot of each group; a slot that found
  work wakes one more of its group. So a wakeup costs one empty fetch per
  worker, not one per slot, and a backlog still brings every slot in.
An asyncio slot does the same with `await slots.wait_for_work_async(...)`,
which never blocks its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from provider.errors import TaskHubError
from provider.worker.calls import WakeupListener


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Sleeper:
    """One sleeping slot: a thread's Event, or a future on the slot's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop
        self.event = threading.Event()
        self.future: asyncio.Future[None] | None = loop.create_future() if loop else None

    def wake(self) -> None:
        self.event.set()
        if self.loop is not None and self.future is not None:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                self.loop.call_soon_threadsafe(_resolve, self.future)

    def sleep(self, timeout_s: float) -> None:
        self.event.wait(timeout_s)

    async def sleep_async(self, timeout_s: float) -> None:
        assert self.future is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.future), timeout_s)


@dataclass(frozen=True)
class Ticket:
    """What a slot saw before its fetch: its group's wakeups, and whether the
    server already knew that the listener waits."""

    generation: int
    server_knew: bool


class SlotGroup:
    """The slots of one worker (one fetch filter), on its listener's SlotBoard."""

    def __init__(self, board: SlotBoard) -> None:
        self._board = board
        self._generation = 0  # +1 per wakeup delivered to this group
        self._sleepers: list[_Sleeper] = []

    def ticket(self) -> Ticket:
        """Take one before each fetch."""
        with self._board._lock:
            return Ticket(self._generation, self._board._server_knows)

    def found_work(self) -> None:
        """The fetch leased an item: there may be more, wake one more slot."""
        with self._board._lock:
            self._wake_one()

    def wait_for_work(
        self,
        ticket: Ticket,
        set_waiting: Callable[[int, bool], None],
        timeout_s: float,
        *,
        announce: bool = True,
    ) -> None:
        """The fetch after `ticket` found nothing: return when the slot should
        fetch again (woken, told the server, or after timeout_s: the poll).
        set_waiting is a hub's set_wakeup_waiting. announce=False: a slot that
        just ran an item polls once before it tells the server (work that
        trickles in is then fetched in batches, not one notification each)."""
        step, value = self._board._next_step(self, ticket, announce=announce)
        if step == "announce":
            try:
                set_waiting(value, True)
            except TaskHubError:
                self._board._announced(ok=False)  # this slot polls; the next says it again
                value = self._sleep_here()
            else:
                self._board._announced(ok=True)
                return
        if isinstance(value, _Sleeper):
            try:
                value.sleep(timeout_s)
            finally:
                self._board._forget(value)

    async def wait_for_work_async(
        self,
        ticket: Ticket,
        set_waiting: Callable[[int, bool], Awaitable[None]],
        timeout_s: float,
        *,
        announce: bool = True,
    ) -> None:
        """As wait_for_work, on the caller's event loop (an AsyncTaskHub's
        set_wakeup_waiting)."""
        loop = asyncio.get_running_loop()
        step, value = self._board._next_step(self, ticket, loop, announce=announce)
        if step == "announce":
            try:
                await set_waiting(value, True)
            except TaskHubError:
                self._board._announced(ok=False)
                value = self._sleep_here(loop)
            else:
                self._board._announced(ok=True)
                return
        if isinstance(value, _Sleeper):
            try:
                await value.sleep_async(timeout_s)
            finally:
                self._board._forget(value)

    def wake_all(self) -> None:
        """Wake every slot of the group (its worker is stopping)."""
        with self._board._lock:
            self._wake_all()

    def close(self) -> None:
        self.wake_all()
        self._board._drop_group(self)

    # Under the board's lock:

    def _sleep_here(self, loop: asyncio.AbstractEventLoop | None = None) -> _Sleeper:
        sleeper = _Sleeper(loop)
        with self._board._lock:
            self._sleepers.append(sleeper)
        return sleeper

    def _wake_one(self) -> None:
        self._generation += 1
        if self._sleepers:
            self._sleepers.pop().wake()  # the latest to sleep: its connection is warm

    def _wake_all(self) -> None:
        self._generation += 1
        for sleeper in self._sleepers:
            sleeper.wake()
        self._sleepers.clear()


class SlotBoard:
    """What the slots of one listening connection share (whether the server
    knows that it waits, who is telling it), for every worker of the process
    that uses that listener: one board per listener (`SlotBoard.of`)."""

    _boards: ClassVar[weakref.WeakKeyDictionary[WakeupListener, SlotBoard]] = (
        weakref.WeakKeyDictionary()
    )
    _boards_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, listener: WakeupListener) -> SlotBoard:
        """The board of `listener`, made (and subscribed to it) by its first user."""
        with cls._boards_lock:
            board = cls._boards.get(listener)
            if board is None:
                board = cls._boards[listener] = SlotBoard()
                listener.subscribe(board)
            return board

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: list[SlotGroup] = []
        self._pid: int | None = None  # the listening connection's, while it listens
        self._server_knows = False  # the server's flag is set (no notification since)
        self._announcing = False  # a slot is telling the server "waiting"
        self._notifications = 0
        self._announced_after = 0  # notifications seen when the announcement began
        self._awaiting_announcement: list[_Sleeper] = []

    def group(self) -> SlotGroup:
        """A new group of slots (one worker's)."""
        group = SlotGroup(self)
        with self._lock:
            self._groups.append(group)
        return group

    def wake_all(self) -> None:
        """Wake every slot of every group now."""
        with self._lock:
            for group in self._groups:
                group._wake_all()
            self._wake_awaiting_announcement()

    # -- the slots' steps, under the lock ---------------------------------------

    def _next_step(
        self,
        group: SlotGroup,
        ticket: Ticket,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        announce: bool = True,
    ) -> tuple[str, Any]:
        """After an empty fetch: ("announce", pid), ("sleep", sleeper) or
        ("look again", None)."""
        with self._lock:
            if ticket.generation != group._generation:
                return "look again", None  # woken since the fetch began
            if self._pid is not None and not ticket.server_knew and announce:
                if self._server_knows:
                    return "look again", None  # told since the fetch began
                if not self._announcing:
                    self._announcing = True
                    self._announced_after = self._notifications
                    return "announce", self._pid
                sleeper = _Sleeper(loop)  # another slot is telling it: then look
                self._awaiting_announcement.append(sleeper)
                return "sleep", sleeper
            sleeper = _Sleeper(loop)  # the server knew (or nobody listens: poll)
            group._sleepers.append(sleeper)
            return "sleep", sleeper

    def _announced(self, ok: bool) -> None:
        """The announcement ended. Slots whose fetch began before it look once
        more: work committed before it went unannounced."""
        with self._lock:
            self._announcing = False
            if ok and self._notifications == self._announced_after:
                self._server_knows = True  # unless a notification cleared it meanwhile
            self._wake_awaiting_announcement()

    def _wake_awaiting_announcement(self) -> None:
        for sleeper in self._awaiting_announcement:
            sleeper.wake()
        self._awaiting_announcement.clear()

    def _forget(self, sleeper: _Sleeper) -> None:
        """A sleeper that woke by its timeout leaves the lists."""
        with self._lock:
            for group in self._groups:
                if sleeper in group._sleepers:
                    group._sleepers.remove(sleeper)
            if sleeper in self._awaiting_announcement:
                self._awaiting_announcement.remove(sleeper)

    def _drop_group(self, group: SlotGroup) -> None:
        with self._lock:
            if group in self._groups:
                self._groups.remove(group)

    # -- the listener's events ---------------------------------------------------

    def notified(self) -> None:
        """The server notified (and cleared its flag): one slot of each group looks."""
        with self._lock:
            self._notifications += 1
            self._server_knows = False
            for group in self._groups:
                group._wake_one()

    def listening(self, pid: int) -> None:
        """A new listening connection: every slot looks at what came while
        nobody listened, and the first to find nothing announces it waits."""
        with self._lock:
            self._pid, self._server_knows = pid, False
        self.wake_all()

    def lost(self) -> None:
        """The listening connection is gone: the slots poll until a new one listens."""
        with self._lock:
            self._pid = None
