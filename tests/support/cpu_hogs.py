"""A loaded machine on demand: one process spinning on each core, for a test
whose promise must hold when the machine is busy (Ctrl-C, say)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "while True: pass"


@contextmanager
def cpu_hogs(count: int | None = None) -> Iterator[None]:
    """`count` spinning processes (default: one per core) for the block's length."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(count or os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
