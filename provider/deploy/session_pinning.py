"""A migration runs on one server session, from its first transaction to its last.

Its run-wide advisory lock and its settings (search_path, lock_timeout,
check_function_bodies) belong to that session. Behind a transaction pooler
each transaction may land on another server connection: the lock would not
hold the run, and whatever the run set would stay behind on a connection the
pooler hands to the application (a 100 ms lock_timeout, a search_path of
pg_catalog, a lock the next deploy waits on forever).

So the run notes its server's pid before it sets anything. A pid other than
the one the connection announced means a pooler is in between; a second
connection then looks whether it gets the same server session, which only a
transaction pooler hands out, and the run is refused before anything is set
or taken. Every later transaction checks the pid again, and at the end a run
through a pooler discards what it set on that session (a pooler in session
mode does the same when the client leaves; one in transaction mode does not).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from alembic.util import CommandError

log = logging.getLogger(__name__)

REFUSAL = "connect directly or through session pooling"
SERVER_PID = "SELECT pg_backend_pid()"


class SessionNotPinned(CommandError):
    """The run's transactions do not all reach one server session (a
    transaction pooler): refused, with nothing left behind. A CommandError, so
    that the alembic command prints it as one line."""


@dataclass(frozen=True)
class Pin:
    """The server session a run started on."""

    pid: int
    pooled: bool  # a pooler answered in the server's place


def server_pid(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(SERVER_PID).fetchone()
    assert row is not None
    return int(row[0])


def pin(
    conn: psycopg.Connection[Any],
    url: str,
    connect_args: dict[str, Any],
    refused: str = "refused before any revision: the migration's connection",
) -> Pin:
    """The run's first look, before it sets or takes anything: the server's pid,
    and a refusal when a second client of the same pooler reaches that very
    server session (transaction pooling). `refused` names who is refused."""
    pid = server_pid(conn)
    conn.rollback()  # between transactions, a transaction pooler may hand the session on
    pooled = pid != conn.info.backend_pid
    if pooled:
        with psycopg.connect(url, autocommit=True, prepare_threshold=None, **connect_args) as other:
            shared = server_pid(other) == pid
        if shared:
            raise SessionNotPinned(
                f"{refused} goes through a pooler that hands its server session "
                f"(pid {pid}) to other clients between transactions (transaction "
                f"pooling); {REFUSAL}"
            )
    return Pin(pid, pooled)


def check(conn: psycopg.Connection[Any], pinned: Pin) -> None:
    """Refuse the transaction under way when it reached another server session."""
    pid = server_pid(conn)
    if pid != pinned.pid:
        raise SessionNotPinned(
            f"refused: a transaction of the migration reached another server session "
            f"(pid {pid}, not {pinned.pid}): a transaction pooler is in between; "
            f"the revision under way rolled back; {REFUSAL}"
        )


def release(conn: psycopg.Connection[Any], pinned: Pin) -> None:
    """After a run through a pooler, leave its server session as it found it:
    DISCARD ALL ends the run's lock and settings. On another session (the
    pooler moved the run), the run's session is ended instead when idle: what
    it holds then belongs to nobody."""
    if not pinned.pooled or conn.closed:
        return
    try:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        conn.autocommit = True
        if server_pid(conn) == pinned.pid:
            conn.execute("DISCARD ALL")
            return
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid = %s AND state = 'idle'",
            [pinned.pid],
        )
        log.warning(
            "the migration's server session (pid %s) was ended: a transaction pooler "
            "had moved the run off it",
            pinned.pid,
        )
    except psycopg.Error as error:  # the run's own outcome is what the caller hears
        log.warning("could not clean up the migration's server session: %s", error)


@contextmanager
def one_transaction_behind_a_pooler(
    conn: psycopg.Connection[Any], session_settings: list[str]
) -> Iterator[None]:
    """An autocommit connection for a short verb, with `session_settings`
    (SET statements) in force for all of it. Direct, they are SET on the
    session, which ends with the connection. Behind a pooler (a transaction
    pooler would hand the session to the application with them), the verb's
    statements run in one transaction instead, and the settings are SET LOCAL."""
    pooled = server_pid(conn) != conn.info.backend_pid
    if not pooled:
        for setting in session_settings:
            conn.execute(setting)
        yield
        return
    conn.autocommit = False
    with conn.transaction():
        for setting in session_settings:
            conn.execute(setting.replace("SET ", "SET LOCAL ", 1))
        yield
