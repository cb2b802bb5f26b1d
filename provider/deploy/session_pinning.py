"""A migration runs on one server session, from its first transaction to its last.

Its run-wide advisory lock and its settings (search_path, lock_timeout,
check_function_bodies) belong to that session. Behind a transaction pooler
each transaction may land on another server connection: the lock would not
hold the run, and whatever the run set would stay behind on a connection the
pooler hands to the application (a 100 ms lock_timeout, a search_path of
pg_catalog, a lock the next deploy waits on forever).

A client cannot tell a pooler's session mode from its transaction mode
reliably (a second client reaches the same server session only when the
pooler happens to hand it out: not under load, measured). So the run notes
its server's pid before it sets anything, and a pid other than the one the
connection announced (a pooler announces its own) refuses the run, in one
line, before anything is set or taken, unless the deploy says the pooler
pins sessions (TASKHUB_POOLER=session). Then a second connection still looks
whether it reaches the same server session (a pooler in transaction mode
said to be in session mode, caught when idle), every later transaction checks
the pid again, and at the end the run discards what it set on its session (a
session pooler does the same when the client leaves).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from provider.deploy.refusals import SessionNotPinned

log = logging.getLogger(__name__)

REFUSAL = "connect directly or through session pooling"
# Qualified: it is a session's first statement, before its search_path is
# pinned (a setting of the database may have put a lesser role's schema first).
SERVER_PID = "SELECT pg_catalog.pg_backend_pid()"
# How a deploy says that the pooler in between pins sessions.
DECLARATION = "TASKHUB_POOLER"
SESSION_POOLING = "session"


def declared_session_pooling() -> bool:
    return os.environ.get(DECLARATION, "").strip().lower() == SESSION_POOLING


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
    """The run's first look, before it sets or takes anything: the server's
    pid, and a refusal behind a pooler not said to pin sessions, or one that
    hands this very server session to a second client. `refused` names who is
    refused."""
    pid = server_pid(conn)
    conn.rollback()  # between transactions, a transaction pooler may hand the session on
    pooled = pid != conn.info.backend_pid
    if not pooled:
        return Pin(pid, pooled=False)
    if not declared_session_pooling():
        raise SessionNotPinned(
            f"{refused} goes through a pooler (the server's pid {pid} is not the one the "
            f"connection announced), and it needs one server session: {REFUSAL} "
            f"(through a pooler's session mode, say so with {DECLARATION}={SESSION_POOLING})"
        )
    with psycopg.connect(url, autocommit=True, prepare_threshold=None, **connect_args) as other:
        shared = server_pid(other) == pid
    if shared:
        raise SessionNotPinned(
            f"{refused} goes through a pooler that hands its server session "
            f"(pid {pid}) to another client between transactions: transaction "
            f"pooling, though {DECLARATION}={SESSION_POOLING}; {REFUSAL}"
        )
    return Pin(pid, pooled=True)


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
    DISCARD ALL ends the run's lock and settings. A run the pooler moved off
    its session (refused by `check`) cannot reach it any more: the warning
    names it, for an operator to end."""
    if not pinned.pooled or conn.closed:
        return
    try:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            conn.rollback()
        conn.autocommit = True
        if server_pid(conn) == pinned.pid:
            conn.execute("DISCARD ALL")
            return
    except psycopg.Error as error:  # the run's own outcome is what the caller hears
        log.warning("could not clean up the migration's server session: %s", error)
        return
    log.warning(
        "the migration's server session (pid %s) may still hold its lock and settings: "
        "a transaction pooler moved the run off it; end it with "
        "SELECT pg_terminate_backend(%s) once it is idle",
        pinned.pid,
        pinned.pid,
    )


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
