"""Push wakeups: one listening connection per worker process.

The procedures that make work visible notify the schema's channel while some
listener says it waits (sql/head/wakeups/). A worker's idle slots wait on
this listener instead of sleeping through a poll interval, and keep a slow
poll as the safety net (delayed timers, a notification lost with its
connection). When the listening connection dies, it is opened again and
registered again; meanwhile the slots just poll.

    listener = WakeupListener(hub.config, set_waiting=hub.set_wakeup_waiting).start()
    seen = listener.generation
    if hub.fetch_work_item() is None:
        with listener.idle() as announced:     # says "waiting" while any slot is
            if not announced or hub.fetch_work_item() is None:  # look once more
                listener.wait(seen, 0.5)       # returns at a wakeup, or after 0.5 s
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import psycopg
from psycopg import sql

from provider.client.procedures import connection_settings
from provider.config import TaskHubConfig
from provider.errors import TaskHubError
from provider.logs import fields

log = logging.getLogger(__name__)

RECONNECT_DELAYS_S = (0.1, 0.5, 1.0, 2.0, 5.0)


def _register_query(schema: str) -> sql.Composed:
    """Register this connection as a listener of a queue; returns the channel."""
    return sql.SQL("SELECT {}.taskhub_listen(%s)").format(sql.Identifier(schema))


def _listen_statement(channel: Any) -> sql.Composed:
    return sql.SQL("LISTEN {}").format(sql.Identifier(str(channel)))


def _register(conn: psycopg.Connection[Any], schema: str, queue: str) -> tuple[str, int]:
    """LISTEN on the schema's channel as a listener of `queue`: (channel, pid)."""
    row = conn.execute(_register_query(schema), [queue]).fetchone()
    assert row is not None
    conn.execute(_listen_statement(row[0]))
    return str(row[0]), conn.info.backend_pid


def _log_no_wakeups(schema: str) -> None:
    log.info(
        "schema %s has no push wakeups (revision 0009): polling only",
        schema,
        extra=fields("wakeups.unavailable", schema=schema),
    )


class _IdleSlots:
    """How many slots wait, and the listener's pid that the count is about."""

    def __init__(self) -> None:
        self.count = 0
        self.pid: int | None = None
        self.said_waiting = False


class WakeupListener:
    """The blocking worker's listener: a thread with its own connection."""

    def __init__(
        self,
        config: TaskHubConfig,
        *,
        set_waiting: Callable[[int, bool], None],
        queue: str = "worker",
    ) -> None:
        self.config = config
        self.queue = queue
        self._set_waiting = set_waiting
        self._changed = threading.Condition()
        self.generation = 0  # +1 per wakeup received
        self._idle = _IdleSlots()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="wakeups", daemon=True)

    def start(self) -> WakeupListener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def wait(self, seen: int, timeout_s: float) -> bool:
        """Until a wakeup after generation `seen`, or timeout_s: True when woken."""
        with self._changed:
            return self._changed.wait_for(lambda: self.generation > seen, timeout_s)

    @contextlib.contextmanager
    def idle(self) -> Iterator[bool]:
        """A slot waits. The first slot to wait since the last wakeup tells the
        server the listener waits (the procedures clear that when they notify,
        so a busy worker costs nothing). Yields True to the slot that told:
        work committed just before was not announced, so it looks once more."""
        announced = self._count_idle(+1)
        try:
            yield announced
        finally:
            self._count_idle(-1)

    def _count_idle(self, change: int) -> bool:
        """Count a slot in or out; True when this call told the server "waiting"."""
        with self._changed:
            self._idle.count += change
            pid = self._idle.pid
            if pid is None or self._idle.count == 0 or self._idle.said_waiting:
                return False
            self._idle.said_waiting = True
        try:
            self._set_waiting(pid, True)
        except TaskHubError:
            # The slot polls anyway; the next slot to wait says it again.
            with self._changed:
                self._idle.said_waiting = False
            return False
        return True

    def wake_all(self) -> None:
        """Wake every waiting slot now (a worker stopping)."""
        self._woken(notified=False)

    def _woken(self, notified: bool = True) -> None:
        with self._changed:
            self.generation += 1
            if notified:
                self._idle.said_waiting = False  # the notifier cleared the flag
            self._changed.notify_all()

    def _listen(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.config.url, **connection_settings(self.config)) as conn:
                    channel, pid = _register(conn, self.config.schema, self.queue)
                    failures = 0
                    with self._changed:
                        self._idle.pid, self._idle.said_waiting = pid, False
                    self._woken(notified=False)  # look at what came while not listening
                    self._count_idle(0)  # announce slots that were already waiting
                    log.debug(
                        "listening on %s",
                        channel,
                        extra=fields("wakeups.listening", schema=self.config.schema, pid=pid),
                    )
                    while not self._stopping.is_set():
                        # Short waits: stop() is seen within 0.1 s.
                        for _ in conn.notifies(timeout=0.1, stop_after=1):
                            self._woken()
            except psycopg.errors.UndefinedFunction:
                _log_no_wakeups(self.config.schema)
                return
            except psycopg.Error as error:
                with self._changed:
                    self._idle.pid = None
                delay = RECONNECT_DELAYS_S[min(failures, len(RECONNECT_DELAYS_S) - 1)]
                failures += 1
                log.warning(
                    "wakeup listener lost its connection, listening again in %.1f s: %s",
                    delay,
                    error,
                    extra=fields("wakeups.reconnecting", schema=self.config.schema),
                )
                self._stopping.wait(delay)


class AsyncWakeupListener:
    """The asyncio worker's listener: a task with its own AsyncConnection."""

    def __init__(
        self,
        config: TaskHubConfig,
        *,
        set_waiting: Callable[[int, bool], Awaitable[None]],
        queue: str = "worker",
    ) -> None:
        self.config = config
        self.queue = queue
        self._set_waiting = set_waiting
        self._changed = asyncio.Condition()
        self.generation = 0
        self._idle = _IdleSlots()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> AsyncWakeupListener:
        self._task = asyncio.create_task(self._listen(), name="wakeups")
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait(self, seen: int, timeout_s: float) -> bool:
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: self.generation > seen), timeout_s
                )
            return self.generation > seen

    @contextlib.asynccontextmanager
    async def idle(self) -> AsyncIterator[bool]:
        """As WakeupListener.idle."""
        announced = await self._count_idle(+1)
        try:
            yield announced
        finally:
            await self._count_idle(-1)

    async def _count_idle(self, change: int) -> bool:
        self._idle.count += change
        pid = self._idle.pid
        if pid is None or self._idle.count == 0 or self._idle.said_waiting:
            return False
        self._idle.said_waiting = True
        try:
            await self._set_waiting(pid, True)
        except TaskHubError:
            self._idle.said_waiting = False
            return False
        return True

    async def wake_all(self) -> None:
        await self._woken(notified=False)

    async def _woken(self, notified: bool = True) -> None:
        async with self._changed:
            self.generation += 1
            if notified:
                self._idle.said_waiting = False
            self._changed.notify_all()

    async def _listen(self) -> None:
        failures = 0
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.config.url, **connection_settings(self.config)
                ) as conn:
                    cur = await conn.execute(_register_query(self.config.schema), [self.queue])
                    row = await cur.fetchone()
                    assert row is not None
                    await conn.execute(_listen_statement(row[0]))
                    failures = 0
                    self._idle.pid, self._idle.said_waiting = conn.info.backend_pid, False
                    await self._woken(notified=False)
                    await self._count_idle(0)
                    async for _ in conn.notifies():
                        await self._woken()
            except psycopg.errors.UndefinedFunction:
                _log_no_wakeups(self.config.schema)
                return
            except psycopg.Error as error:
                self._idle.pid = None
                delay = RECONNECT_DELAYS_S[min(failures, len(RECONNECT_DELAYS_S) - 1)]
                failures += 1
                log.warning(
                    "wakeup listener lost its connection, listening again in %.1f s: %s",
                    delay,
                    error,
                    extra=fields("wakeups.reconnecting", schema=self.config.schema),
                )
                await asyncio.sleep(delay)
