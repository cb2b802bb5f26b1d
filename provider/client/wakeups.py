"""Push wakeups: one listening connection per process, for every worker.

The procedures that make work visible notify the schema's channel while some
listener says it waits (sql/head/wakeups/). All the workers of a process
that serve one schema, threaded and asyncio alike, share one Wakeups: one
thread with one LISTEN connection. Their idle slots wait on it instead of
sleeping through a poll interval, and keep a slow poll as the safety net
(delayed timers, a notification lost with its connection). When the
listening connection dies, it is opened again and registered again;
meanwhile the slots just poll.

    wakeups = Wakeups.acquire(hub.config)          # shared; release() when done
    seen = wakeups.generation
    if hub.fetch_work_item() is None:
        with wakeups.idle(hub.set_wakeup_waiting) as announced:
            if not announced or hub.fetch_work_item() is None:  # look once more
                wakeups.wait(seen, 0.5)            # returns at a wakeup, or after 0.5 s

An asyncio slot does the same with `async with wakeups.idle_async(...)` and
`await wakeups.wait_async(...)`, which never block its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
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


class Wakeups:
    """The process's listener for one schema and queue, shared by its workers."""

    _shared: ClassVar[dict[Key, Wakeups]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: TaskHubConfig, queue: str = "worker") -> None:
        self.config = config
        self.queue = queue
        self.generation = 0  # +1 per wakeup received
        self._changed = threading.Condition()
        self._async_waiters: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}
        self._idle_slots = 0
        self._pid: int | None = None  # the listening connection's, while it listens
        self._said_waiting = False
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

    def wait(self, seen: int, timeout_s: float) -> bool:
        """Until a wakeup after generation `seen`, or timeout_s: True when woken."""
        with self._changed:
            return self._changed.wait_for(lambda: self.generation > seen, timeout_s)

    async def wait_async(self, seen: int, timeout_s: float) -> bool:
        """As wait(), on the caller's event loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._changed:
            if self.generation > seen:
                return True
            self._async_waiters[future] = loop
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(future, timeout_s)
        finally:
            with self._changed:
                self._async_waiters.pop(future, None)
        return self.generation > seen

    @contextlib.contextmanager
    def idle(self, set_waiting: Callable[[int, bool], None]) -> Iterator[bool]:
        """A slot waits. The first slot to wait since the last wakeup tells the
        server the listener waits (set_waiting: a hub's set_wakeup_waiting;
        the procedures clear the flag when they notify, so a busy hub costs
        nothing). Yields True to the slot that told: work committed just
        before was not announced, so it looks once more."""
        pid = self._slot_idles()
        announced = False
        if pid is not None:
            try:
                set_waiting(pid, True)
                announced = True
            except TaskHubError:
                self._announcement_failed()  # the slot polls; the next one says it again
        try:
            yield announced
        finally:
            self._slot_works()

    @contextlib.asynccontextmanager
    async def idle_async(
        self, set_waiting: Callable[[int, bool], Awaitable[None]]
    ) -> AsyncIterator[bool]:
        """As idle(), with an AsyncTaskHub's set_wakeup_waiting."""
        pid = self._slot_idles()
        announced = False
        if pid is not None:
            try:
                await set_waiting(pid, True)
                announced = True
            except TaskHubError:
                self._announcement_failed()
        try:
            yield announced
        finally:
            self._slot_works()

    def wake_all(self) -> None:
        """Wake every waiting slot now (a worker stopping: its slots see it)."""
        self._woken(notified=False)

    # -- the shared count of idle slots ---------------------------------------

    def _slot_idles(self) -> int | None:
        """Count a slot in; the listener's pid when this slot is to announce."""
        with self._changed:
            self._idle_slots += 1
            return self._claim_announcement()

    def _slot_works(self) -> None:
        with self._changed:
            self._idle_slots -= 1

    def _claim_announcement(self) -> int | None:
        """Under the lock: the pid to announce, if slots wait and nobody said so."""
        if self._pid is None or self._idle_slots == 0 or self._said_waiting:
            return None
        self._said_waiting = True
        return self._pid

    def _announcement_failed(self) -> None:
        with self._changed:
            self._said_waiting = False

    def _woken(self, notified: bool = True) -> None:
        with self._changed:
            self.generation += 1
            if notified:
                self._said_waiting = False  # the notifier cleared the flag
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
        """A new listening connection: slots look at what came while nobody
        listened, and slots that already wait are announced."""
        with self._changed:
            self._pid, self._said_waiting = pid, False
        self._woken(notified=False)
        # No hub at hand here: the next slot to wait announces (a slot woken
        # just now looks, finds nothing, and waits again).
