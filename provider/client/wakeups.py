"""Push wakeups: one listening connection per process, for every worker.

The procedures that make work visible notify the schema's channel while the
listener says it waits (sql/head/wakeups/). All the workers of a process
that serve one schema, threaded and asyncio alike, share one Wakeups: one
thread with one LISTEN connection. Their idle slots wait on it instead of
sleeping through a poll interval, and keep a slow poll as the safety net
(delayed timers, a notification lost with its connection). When the
listening connection dies, it is opened again and registered again;
meanwhile the slots just poll.

    wakeups = Wakeups.acquire(hub.config)        # shared; release() when done
    while True:
        ticket = wakeups.ticket()                # before the fetch
        if hub.fetch_work_item() is None:
            wakeups.wait_for_work(ticket, hub.set_wakeup_waiting, 0.5)

A slot sleeps only when the server was told "waiting" before its fetch began:
work committed after that fetch is then announced. Otherwise it tells the
server (or lets the slot that is telling finish) and fetches once more. An
asyncio slot does the same with `await wakeups.wait_for_work_async(...)`,
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


@dataclass(frozen=True)
class Ticket:
    """What a slot saw before its fetch: wakeups received, and "waiting"
    announcements completed. Either moving on means: fetch again."""

    generation: int
    announcements: int


class Wakeups:
    """The process's listener for one schema and queue, shared by its workers."""

    _shared: ClassVar[dict[Key, Wakeups]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: TaskHubConfig, queue: str = "worker") -> None:
        self.config = config
        self.queue = queue
        self._changed = threading.Condition()
        self._generation = 0  # +1 per wakeup received (or listening anew)
        self._announcements = 0  # +1 per "waiting" the server has taken
        self._async_waiters: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}
        self._pid: int | None = None  # the listening connection's, while it listens
        self._announcing = False  # a slot is telling the server "waiting"
        self._server_knows = False  # the server's flag is set (no wakeup since)
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

    # -- waiting --------------------------------------------------------------

    def ticket(self) -> Ticket:
        """Take one before each fetch."""
        with self._changed:
            return Ticket(self._generation, self._announcements)

    def wait_for_work(
        self, ticket: Ticket, set_waiting: Callable[[int, bool], None], timeout_s: float
    ) -> None:
        """The fetch after `ticket` found nothing: sleep until a wakeup, or
        timeout_s (the poll). set_waiting is a hub's set_wakeup_waiting."""
        pid = self._claim_announcement(ticket)
        if pid is not None:
            try:
                set_waiting(pid, True)
            except TaskHubError:
                self._announcement_failed()  # this slot polls; the next says it again
            else:
                self._announced(ticket)
        with self._changed:
            self._changed.wait_for(lambda: self._moved_on(ticket), timeout_s)

    async def wait_for_work_async(
        self,
        ticket: Ticket,
        set_waiting: Callable[[int, bool], Awaitable[None]],
        timeout_s: float,
    ) -> None:
        """As wait_for_work, on the caller's event loop (an AsyncTaskHub's
        set_wakeup_waiting)."""
        pid = self._claim_announcement(ticket)
        if pid is not None:
            try:
                await set_waiting(pid, True)
            except TaskHubError:
                self._announcement_failed()
            else:
                self._announced(ticket)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._changed:
            if self._moved_on(ticket):
                return
            self._async_waiters[future] = loop
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(future, timeout_s)
        finally:
            with self._changed:
                self._async_waiters.pop(future, None)

    def wake_all(self) -> None:
        """Wake every waiting slot now (a worker stopping: its slots see it)."""
        self._woken(notified=False)

    # -- the announcement that a slot waits -----------------------------------

    def _moved_on(self, ticket: Ticket) -> bool:
        return (self._generation, self._announcements) != (
            ticket.generation,
            ticket.announcements,
        )

    def _claim_announcement(self, ticket: Ticket) -> int | None:
        """The listener's pid when this slot is to tell the server "waiting":
        the server does not know yet, and no other slot is telling it."""
        with self._changed:
            if self._pid is None or self._server_knows or self._announcing:
                return None
            if self._moved_on(ticket):
                return None  # the slot fetches again anyway
            self._announcing = True
            return self._pid

    def _announcement_failed(self) -> None:
        with self._changed:
            self._announcing = False

    def _announced(self, ticket: Ticket) -> None:
        """The server took "waiting". Unless a wakeup came meanwhile (which
        cleared it again), it knows; either way every slot whose fetch began
        before now looks once more: work committed before now went unannounced."""
        with self._changed:
            self._announcing = False
            self._server_knows = self._generation == ticket.generation
            self._announcements += 1
        self._wake_waiters()

    def _woken(self, notified: bool = True) -> None:
        with self._changed:
            self._generation += 1
            if notified:
                self._server_knows = False  # the notifier cleared the flag
        self._wake_waiters()

    def _wake_waiters(self) -> None:
        with self._changed:
            self._changed.notify_all()
            waiters = list(self._async_waiters.items())
            self._async_waiters.clear()
        for future, loop in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_resolve, future)

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
                            self._woken()
            except psycopg.errors.UndefinedFunction:
                log.info(
                    "schema %s has no push wakeups (revision 0009): polling only",
                    schema,
                    extra=fields("wakeups.unavailable", schema=schema),
                )
                return
            except psycopg.Error as error:
                with self._changed:
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
        with self._changed:
            self._pid, self._server_knows = pid, False
        self._woken(notified=False)
