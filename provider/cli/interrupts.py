"""Ctrl-C ends a verb promptly, whatever the verb is waiting on.

The first Ctrl-C raises KeyboardInterrupt in the main thread, as Python does:
psycopg cancels the statement under way, the verb's transaction rolls back,
and the verb ends with exit 130 and one line (app._Root). That path can
stall: psycopg gives a cancel request 5 s and the cancelled statement 5 s
more, a pool waits for its connection threads, a loaded machine stretches
each. So a watchdog thread ends the process itself GRACE_S after the first
Ctrl-C if it is still running, and at once on a second Ctrl-C, with the same
exit code and line.

The watchdog hears Ctrl-C through the signal module's wakeup fd, which the
interpreter's C-level handler writes even while the main thread is inside a
call that has not returned to Python. Leaving this way is safe: a client that
goes away commits nothing, and the server rolls its transaction back.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time

from provider.cli.options import INTERRUPTED

GRACE_S = 3.0


class Watchdog:
    """Ends the process GRACE_S after a first Ctrl-C, or at a second one."""

    def __init__(self, line: str) -> None:
        # Made beforehand: at the end the main thread may hold the locks
        # that printing takes.
        self._line = (line + "\n").encode()
        self._said = threading.Event()  # the verb's own line is out: say nothing more

    def arm(self) -> Watchdog:
        """From the main thread of a process that is the command line, never
        in-process (a test calling main()): it can end the process."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)  # the signal handler must never block
        signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        threading.Thread(
            target=self._watch, args=(read_end,), name="ctrl-c watchdog", daemon=True
        ).start()
        return self

    def said(self) -> None:
        """The verb reported its interruption itself."""
        self._said.set()

    def _watch(self, read_end: int) -> None:
        deadline: float | None = None
        while True:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not _readable(read_end, remaining):
                    break  # the grace ran out: the verb did not end by itself
            interrupts = os.read(read_end, 64).count(signal.SIGINT)
            if interrupts == 0:
                continue  # another signal with a Python handler (SIGTERM, say)
            if deadline is not None or interrupts > 1:
                break  # a second Ctrl-C: the user means it
            deadline = time.monotonic() + GRACE_S
        if not self._said.is_set():
            os.write(2, self._line)
        os._exit(INTERRUPTED)


def _readable(fd: int, timeout_s: float) -> bool:
    ready, _, _ = select.select([fd], [], [], timeout_s)
    return bool(ready)
