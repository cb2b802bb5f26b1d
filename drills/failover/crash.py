"""A crash of the primary at an exact point: with its standby caught up.

With asynchronous replication a commit is acknowledged once it is flushed
locally and shipped an instant later; a `pg_ctl stop -m immediate` sent
"when the standby has caught up" lands while commits go on, and in a test
of dense commits half of such crashes left 2 to 29 commits unshipped. So
the crash is made exact: every client backend is stopped (SIGSTOP) where it
is, the standby is waited for until it replayed all the primary flushed,
then the backends are sent SIGQUIT while still stopped, the postmaster
SIGQUIT (what an immediate shutdown sends), and the backends SIGCONT: a
signal pending on a stopped process is taken as it resumes, so they die
before anything more reaches a client. A crash at the moment of the stop.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Iterable

from devkit.waiting import wait_until
from drills.failover.servers import ServerPair
from drills.failover.wal import lsn

SWEEPS = 20  # a backend forked during a sweep is stopped in the next one
STOP_TIMEOUT_S = 60.0


def crash_caught_up(pair: ServerPair, wait_replayed: Callable[[int], None]) -> None:
    """Crash pair.primary once `wait_replayed(position)` returned: the
    standby replayed what the primary had flushed with its clients stopped."""
    primary = pair.primary
    frozen: set[int] = set()
    try:
        with pair.connect(primary) as conn:
            for _ in range(SWEEPS):
                rows = conn.execute(
                    """
                    SELECT pid
                      FROM pg_stat_activity
                     WHERE backend_type = 'client backend'
                       AND pid <> pg_backend_pid()
                    """
                ).fetchall()
                fresh = {int(row[0]) for row in rows} - frozen
                if not fresh:
                    break
                _signal(fresh, signal.SIGSTOP)
                frozen |= fresh
            row = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchone()
        assert row is not None
        wait_replayed(lsn(str(row[0])))
        _signal(frozen, signal.SIGQUIT)  # pending until they resume
        os.kill(primary.postmaster_pid(), signal.SIGQUIT)
    finally:
        _signal(frozen, signal.SIGCONT)
    wait_until(
        lambda: not primary.is_running(),
        timeout_s=STOP_TIMEOUT_S,
        message=f"{primary.name} to stop after its crash",
    )


def _signal(pids: Iterable[int], number: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, number)
