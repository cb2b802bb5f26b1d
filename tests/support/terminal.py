"""A command run in a pseudo-terminal of a given width: what a person at a
terminal sees (rich sizes its tables to the terminal, not to a pipe)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios


def in_a_terminal(argv: list[str], env: dict[str, str], columns: int = 200) -> bytes:
    """What a command writes to a terminal (a pseudo-terminal `columns` wide)."""
    ours, theirs = pty.openpty()
    fcntl.ioctl(theirs, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    command = subprocess.Popen(argv, stdin=theirs, stdout=theirs, stderr=theirs, env=env)
    os.close(theirs)
    written = []
    while True:
        try:
            chunk = os.read(ours, 65536)
        except OSError:  # EIO: the command has exited and closed the terminal
            break
        if not chunk:
            break
        written.append(chunk)
    os.close(ours)
    assert command.wait(timeout=60) == 0, b"".join(written)
    return b"".join(written)
