"""Push wakeups, the listening side: one LISTEN connection per process and
schema, shared by every worker there, threaded and asyncio alike.

The procedures that make work visible notify the schema's channel while the
listener says it waits (sql/head/wakeups/). This thread reports what happens
to its subscriber (the workers' SlotBoard, provider/worker/slots.py, which
decides which slot wakes and when a slot tells the server it waits): a new
listening connection, a notification, the connection lost. When the
connection dies, it is opened again and registered again; meanwhile the
slots just poll.

    listener = hub.wakeups()                     # shared; release() when done
    listener.subscribe(board)                    # board.listening(pid), .notified(), .lost()
"""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar, Protocol

import psycopg
from psycopg import sql

from provider.backoff import Backoff
from provider.client.pooling import PIN_SEARCH_PATH
from provider.client.session_standing import refuse_a_privileged_session
from provider.config import TaskHubConfig
from provider.errors import ConfigurationError
from provider.logs import fields
from provider.masking import masked, passwords_of

log = logging.getLogger(__name__)

# A lost listener listens again after 100 ms, 200 ms, ... at most 5 s, with
# jitter: a fleet whose server restarted does not reconnect in one burst.
RECONNECT_BACKOFF = Backoff(first_s=0.1, cap_s=5.0)
STOP_CHECK_S = 0.1  # how often the listening thread looks whether to stop

Key = tuple[str, str, str]  # (url, schema, queue)


class Subscriber(Protocol):
    """Who hears of the listening connection (the workers' SlotBoard)."""

    def listening(self, pid: int) -> None: ...

    def notified(self) -> None: ...

    def lost(self) -> None: ...

    def wake_all(self) -> None: ...


def _register(conn: psycopg.Connection[Any], schema: str, queue: str) -> tuple[str, int]:
    """LISTEN on the schema's channel as a listener of `queue`: (channel, pid).
    The pid is the server's, as the procedures see it: behind a pooler, the
    one the connection announced is the pooler's."""
    query = sql.SQL("SELECT {}.taskhub_listen(%s), pg_catalog.pg_backend_pid()").format(
        sql.Identifier(schema)
    )
    row = conn.execute(query, [queue]).fetchone()
    assert row is not None
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(str(row[0]))))
    return str(row[0]), int(row[1])


def _listener_settings(config: TaskHubConfig) -> dict[str, Any]:
    """The listening connection runs two short statements once, and may go
    through a session pooler: no startup option, nothing prepared."""
    return {
        "autocommit": True,
        "application_name": config.application_name,
        "prepare_threshold": None,
    }


class Wakeups:
    """The process's listener for one schema and queue, shared by its workers."""

    _shared: ClassVar[dict[Key, Wakeups]] = {}
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, config: TaskHubConfig, queue: str, url: str | None) -> None:
        self.config = config
        self.queue = queue
        self.url = url  # None: nowhere LISTEN can work (a transaction pooler)
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self._pid: int | None = None  # the listening connection's, while it listens
        self._users = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="wakeups", daemon=True)

    # -- sharing --------------------------------------------------------------

    @classmethod
    def acquire(cls, config: TaskHubConfig, queue: str, url: str | None) -> Wakeups:
        """The process's listener for config's schema and `queue` on `url`
        (None: nowhere, the workers poll), started when its first user asks
        for it."""
        key = (url or "", config.schema, queue)
        with cls._shared_lock:
            wakeups = cls._shared.get(key)
            if wakeups is None:
                wakeups = cls._shared[key] = Wakeups(config, queue, url)
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
            key = (self.url or "", self.config.schema, self.queue)
            if self._shared.get(key) is self:
                del self._shared[key]
        self._stopping.set()
        self.wake_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    # -- the listening thread -------------------------------------------------

    def _listen(self) -> None:
        failures = 0
        schema = self.config.schema
        if self.url is None:
            log.warning(
                "schema %s: push wakeups cannot work through a transaction pooler "
                "(LISTEN needs a session): the workers poll; give listen_url (the "
                "server directly, or a pooler's session mode) to have them",
                schema,
                extra=fields("wakeups.unavailable", schema=schema, reason="transaction pooler"),
            )
            return
        while not self._stopping.is_set():
            try:
                with psycopg.connect(self.url, **_listener_settings(self.config)) as conn:
                    # Each connection, before the hub's function runs: the
                    # path pinned (a first statement safe on any path), then
                    # refused where it can do more than the hub's owner.
                    conn.execute(PIN_SEARCH_PATH)
                    refuse_a_privileged_session(conn, schema, "push wakeups")
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
            # A session refused, or a role that may not listen (an operator's
            # Client that waits): asking again would be refused again.
            except (ConfigurationError, psycopg.errors.InsufficientPrivilege) as refused:
                log.error(
                    "schema %s: push wakeups refused, the workers poll: %s",
                    schema,
                    refused,
                    extra=fields("wakeups.unavailable", schema=schema, reason="refused"),
                )
                return
            except psycopg.errors.UndefinedFunction:
                log.info(
                    "schema %s has no push wakeups (revision 0009): polling only",
                    schema,
                    extra=fields("wakeups.unavailable", schema=schema),
                )
                return
            except psycopg.Error as error:
                self._lost()
                failures += 1
                delay = RECONNECT_BACKOFF.pause_s(failures)
                log.warning(
                    "wakeup listener lost its connection, listening again in %.1f s: %s",
                    delay,
                    masked(str(error), passwords_of(self.url)),
                    extra=fields("wakeups.reconnecting", schema=schema),
                )
                self._stopping.wait(delay)

    def subscribe(self, subscriber: Subscriber) -> None:
        """Tell `subscriber` of this listener's connection from now on (and of
        the one listening now, if any)."""
        with self._lock:
            self._subscribers.append(subscriber)
            pid = self._pid
        if pid is not None:
            subscriber.listening(pid)

    def wake_all(self) -> None:
        """Wake every slot of every subscriber now."""
        for subscriber in self._current_subscribers():
            subscriber.wake_all()

    def _current_subscribers(self) -> list[Subscriber]:
        with self._lock:
            return list(self._subscribers)

    def _listening(self, pid: int) -> None:
        with self._lock:
            self._pid = pid
        for subscriber in self._current_subscribers():
            subscriber.listening(pid)

    def _notified(self) -> None:
        for subscriber in self._current_subscribers():
            subscriber.notified()

    def _lost(self) -> None:
        with self._lock:
            self._pid = None
        for subscriber in self._current_subscribers():
            subscriber.lost()
