"""Push wakeups: one listening connection per process, for every worker.

The procedures that make work visible notify the schema's channel while the
listener says it waits (sql/head/wakeups/). All the workers of a process
that serve one schema, threaded and asyncio alike, share one Wakeups: one
thread with one LISTEN connection. Each worker's slots form a SlotGroup (one
fetch filter). Idle slots wait on it instead of sleeping through a poll
interval, and keep a slow poll as the safety net (delayed timers, a
notification lost with its connection). When the listening connection dies,
it is opened again and registered again; meanwhile the slots just poll.

    wakeups = Wakeups.acquire(hub.config)        # shared; release() when done
    slots = wakeups.group()                      # one per worker; close() when done
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
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import psycopg
from psycopg import sql

from provider.client.procedures import connection_settings
from provider.config import TaskHubConfig
from provider.errors import TaskHubError
from provider.logs import fields

log = logging.getLogger(__name__)

RECONNECT_DELAYS_S = (0.1, 0.5, 1.0, 2.0, 5.0)
STOP_CHECK_S = 0.1  # how often the listening thread looks whether to stop

Key = tuple[str, str, str]  # (url, schema, queue)


def _register(conn: psycopg.Connection[Any], schema: str, queue: str) -> tuple[str, int]:
    """LISTEN on the schema's channel as a listener of `queue`: (channel, pid)."""
    query = sql.SQL("SELECT {}.taskhub_listen(%s)").format(sql.Identifier(schema))
    row = conn.execute(query, [queue]).fetchone()
    assert row is not None
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(str(row[0]))))
    return str(row[0]), conn.info.backend_pid


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
    """The slots of one worker (one fetch filter), sharing a Wakeups."""

    def __init__(self, wakeups: Wakeups) -> None:
        self._wakeups = wakeups
        self._generation = 0  # +1 per wakeup delivered to this group
        self._sleepers: list[_Sleeper] = []

    def ticket(self) -> Ticket:
        """Take one before each fetch."""
        with self._wakeups._lock:
            return Ticket(self._generation, self._wakeups._server_knows)

    def found_work(self) -> None:
        """The fetch leased an item: there may be more, wake one more slot."""
        with self._wakeups._lock:
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
        step, value = self._wakeups._next_step(self, ticket, announce=announce)
        if step == "announce":
            try:
                set_waiting(value, True)
            except TaskHubError:
                self._wakeups._announced(ok=False)  # this slot polls; the next says it again
                value = self._sleep_here()
            else:
                self._wakeups._announced(ok=True)
                return
        if isinstance(value, _Sleeper):
            try:
                value.sleep(timeout_s)
            finally:
                self._wakeups._forget(value)

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
        step, value = self._wakeups._next_step(self, ticket, loop, announce=announce)
        if step == "announce":
            try:
                await set_waiting(value, True)
            except TaskHubError:
                self._wakeups._announced(ok=False)
                value = self._sleep_here(loop)
            else:
                self._wakeups._announced(ok=True)
                return
        if isinstance(value, _Sleeper):
            try:
                await value.sleep_async(timeout_s)
            finally:
                self._wakeups._forget(value)

    def wake_all(self) -> None:
        """Wake every slot of the group (its worker is stopping)."""
        with self._wakeups._lock:
            self._wake_all()

    def close(self) -> None:
        self.wake_all()
        self._wakeups._drop_group(self)

    # Under the Wakeups' lock:

    def _sleep_here(self, loop: asyncio.AbstractEventLoop | None = None) -> _Sleeper:
        sleeper = _Sleeper(loop)
        with self._wakeups._lock:
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


class Wakeups:
    """The process's listener for one schema and queue, shared by its workers."""

    _shared: ClassVar[dict[Key, Wakeups]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: TaskHubConfig, queue: str = "worker") -> None:
        self.config = config
        self.queue = queue
        self._lock = threading.Lock()
        self._groups: list[SlotGroup] = []
        self._pid: int | None = None  # the listening connection's, while it listens
        self._server_knows = False  # the server's flag is set (no notification since)
        self._announcing = False  # a slot is telling the server "waiting"
        self._notifications = 0
        self._announced_after = 0  # notifications seen when the announcement began
        self._awaiting_announcement: list[_Sleeper] = []
        self._users = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="wakeups", daemon=True)

    # -- sharing --------------------------------------------------------------

    @classmethod
    def acquire(cls, config: TaskHubConfig, queue: str = "worker") -> Wakeups:
        """The process's listener for config's schema and `queue`, started
        when its first user asks for it."""
        key = (config.url, config.schema, queue)
        with cls._shared_lock:
            wakeups = cls._shared.get(key)
            if wakeups is None:
                wakeups = cls._shared[key] = Wakeups(config, queue)
                wakeups._thread.start()
            wakeups._users += 1
            return wakeups

    def release(self) -> None:
        """One user is done; the last one stops the listener and closes its
        connection (within STOP_CHECK_S)."""
        with self._shared_lock:
            self._users -= 1
            if self._users > 0:
                return
            key = (self.config.url, self.config.schema, self.queue)
            if self._shared.get(key) is self:
                del self._shared[key]
        self._stopping.set()
        self.wake_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

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

    def _notified(self) -> None:
        """The server notified (and cleared its flag): one slot of each group looks."""
        with self._lock:
            self._notifications += 1
            self._server_knows = False
            for group in self._groups:
                group._wake_one()

    # -- the listening thread -------------------------------------------------

    def _listen(self) -> None:
        failures = 0
        schema = self.config.schema
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.config.url, **connection_settings(self.config)) as conn:
                    channel, pid = _register(conn, schema, self.queue)
                    failures = 0
                    self._listening(pid)
                    log.debug(
                        "listening on %s",
                        channel,
                        extra=fields("wakeups.listening", schema=schema, pid=pid),
                    )
                    while not self._stopping.is_set():
                        for _ in conn.notifies(timeout=STOP_CHECK_S, stop_after=1):
                            self._notified()
            except psycopg.errors.UndefinedFunction:
                log.info(
                    "schema %s has no push wakeups (revision 0009): polling only",
                    schema,
                    extra=fields("wakeups.unavailable", schema=schema),
                )
                return
            except psycopg.Error as error:
                with self._lock:
                    self._pid = None
                delay = RECONNECT_DELAYS_S[min(failures, len(RECONNECT_DELAYS_S) - 1)]
                failures += 1
                log.warning(
                    "wakeup listener lost its connection, listening again in %.1f s: %s",
                    delay,
                    error,
                    extra=fields("wakeups.reconnecting", schema=schema),
                )
                self._stopping.wait(delay)

    def _listening(self, pid: int) -> None:
        """A new listening connection: every slot looks at what came while
        nobody listened, and the first to find nothing announces it waits."""
        with self._lock:
            self._pid, self._server_knows = pid, False
        self.wake_all()
