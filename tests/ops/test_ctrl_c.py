"""Ctrl-C ends a verb promptly, whatever it waits on, on a busy machine
(issue 41): exit 130 and one line, the verb's transaction rolled back.

Each test runs `python -m provider status` as a user would, makes it wait on
a lock of its own hub's queue, and interrupts it with one process spinning on
each core beside it."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devkit.waiting import wait_until
from provider.cli.interrupts import GRACE_S
from tests.support.cpu_hogs import cpu_hogs
from tests.support.paths import REPO
from tests.support.socket_relay import socket_relay

# Ended by the watchdog, with room for a loaded machine; psycopg alone, when
# its cancel request cannot reach the server, gives up after 10 s (5 s for
# the cancel, 5 s more for the statement to end).
PROMPTLY_S = GRACE_S + 3.0

# Wall-clock margins, and CPU hogs that would slow every test beside them.
pytestmark = [pytest.mark.timing, pytest.mark.alone]


def _ctrl_c_as_a_terminal_leaves_it() -> None:
    """In the child: SIGINT's default action, as a shell gives a command it
    runs in the foreground. A suite started in the background (`make test &`)
    ignores SIGINT, and its children would inherit that: the verb would
    rightly ignore the test's Ctrl-C, as a user asked it to."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass(frozen=True)
class Interrupted:
    code: int | None
    stderr: str
    seconds: float  # from SIGINT to the process's end


def interrupt_status(
    hub_url: str,
    schema: str,
    cli_url: str,
    when_waiting: Callable[[], None] = lambda: None,
    interrupts: int = 1,
) -> Interrupted:
    """`status` through cli_url, waiting on a lock held here; when_waiting()
    runs once it waits, then `interrupts` SIGINTs, on a loaded machine."""
    application = f"ctrl-c-{schema}"
    url = cli_url + ("&" if "?" in cli_url else "?") + f"application_name={application}"
    with psycopg.connect(hub_url) as holder, cpu_hogs():
        holder.execute(f"LOCK TABLE {schema}.orchestrator_queue IN ACCESS EXCLUSIVE MODE")
        status = subprocess.Popen(
            [sys.executable, "-m", "provider", "status", "--url", url, "--schema", schema],
            cwd=REPO,
            preexec_fn=_ctrl_c_as_a_terminal_leaves_it,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _wait_for_lock_wait(hub_url, application)
            when_waiting()
            sent = time.monotonic()
            for _ in range(interrupts):
                status.send_signal(signal.SIGINT)
                # Signals of one kind do not queue: a second sent before the
                # first is delivered would be the same one.
                wait_until(
                    lambda: not _pending_sigint(status.pid),
                    timeout_s=10,
                    interval_s=0.01,
                    message="SIGINT to be delivered",
                )
            _, err = status.communicate(timeout=60)
            ended = time.monotonic()
        finally:
            status.kill()
            holder.rollback()
    return Interrupted(status.returncode, err, ended - sent)


def _pending_sigint(pid: int) -> bool:
    """SIGINT sent to the process and not delivered yet (/proc's masks)."""
    try:
        fields = Path(f"/proc/{pid}/status").read_text().splitlines()
    except FileNotFoundError:
        return False  # it ended
    masks = [int(line.split()[1], 16) for line in fields if line.startswith(("SigPnd", "ShdPnd"))]
    return any(mask & (1 << (signal.SIGINT - 1)) for mask in masks)


def _wait_for_lock_wait(url: str, application: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:

        def waiting() -> bool:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = %s AND wait_event_type = 'Lock'",
                [application],
            ).fetchone()
            return bool(row and row[0])

        wait_until(
            waiting, timeout_s=60, interval_s=0.05, message=f"{application} to wait for the lock"
        )


def only_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_ctrl_c_during_a_lock_wait_is_exit_130_and_one_line(
    database_url: str, hub_schema: str
) -> None:
    """psycopg cancels the statement: the verb ends at once, by itself."""
    done = interrupt_status(database_url, hub_schema, database_url)
    assert done.code == 130, done
    assert only_line(done.stderr).startswith("taskhub-pg: interrupted")
    assert done.seconds < PROMPTLY_S, done


def test_ctrl_c_ends_a_verb_cut_off_from_its_server_within_the_grace(
    database_url: str, hub_schema: str
) -> None:
    """The link to the server stalls while the verb waits: the cancel request
    never arrives. Without the watchdog the verb ran until psycopg gave up
    (10 s); now it ends GRACE_S after Ctrl-C, with the same code and line."""
    with socket_relay(database_url) as relay:
        done = interrupt_status(database_url, hub_schema, relay.url(), when_waiting=relay.pause)
    assert done.code == 130, done
    assert only_line(done.stderr).startswith("taskhub-pg: interrupted")
    assert GRACE_S <= done.seconds < PROMPTLY_S, done  # the watchdog ended it


def test_a_second_ctrl_c_ends_the_verb_at_once(database_url: str, hub_schema: str) -> None:
    with socket_relay(database_url) as relay:
        done = interrupt_status(
            database_url, hub_schema, relay.url(), when_waiting=relay.pause, interrupts=2
        )
    assert done.code == 130, done
    assert only_line(done.stderr).startswith("taskhub-pg: interrupted")
    assert done.seconds < GRACE_S, done
