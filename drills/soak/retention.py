"""The operator's retention job: `taskhub-pg prune` every minute, deleting the
instances that ended more than the retention window ago, exactly as a cron
line would run it (a process of its own, the CLI's own output)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The CLI's connections name themselves so (TaskHubConfig.application_name).
RETENTION_APP = "taskhub-pg"
MESSAGE_CHARS = 300


@dataclass(frozen=True)
class PruneRun:
    at_s: float  # since the soak began
    seconds: float
    instances_deleted: int
    error: str | None


@dataclass
class Retention:
    url: str
    schema: str
    window_s: int  # prune what ended longer ago than this
    every_s: float = 60.0
    runs: list[PruneRun] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _taken: int = 0
    _thread: threading.Thread | None = None

    def start(self, began: float) -> None:
        self._thread = threading.Thread(
            target=self._loop, args=(began,), name="soak-retention", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def take_finished(self) -> list[PruneRun]:
        """The runs that finished since the last call."""
        taken, self._taken = self.runs[self._taken :], len(self.runs)
        return taken

    def _loop(self, began: float) -> None:
        # As cron does: at every_s, 2 * every_s, ... after the start, whatever
        # the runs take (a run that overruns its slot skips the next).
        tick = 1
        while not self._stop.wait(max(0.0, began + tick * self.every_s - time.monotonic())):
            self.runs.append(self.prune_once(time.monotonic() - began))
            tick = max(tick + 1, int((time.monotonic() - began) // self.every_s) + 1)

    def prune_once(self, at_s: float) -> PruneRun:
        command = [
            sys.executable,
            "-m",
            "provider",
            "prune",
            "--url",
            self.url,
            "--schema",
            self.schema,
            "--completed-before",
            f"{self.window_s}s",
            "--yes",
            "--json",
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        seconds = time.monotonic() - started
        if done.returncode != 0:
            message = (done.stderr.strip() or done.stdout.strip())[-MESSAGE_CHARS:]
            return PruneRun(at_s, seconds, 0, f"exit {done.returncode}: {message}")
        counts = json.loads(done.stdout)
        return PruneRun(at_s, seconds, int(counts.get("instances_deleted", 0)), None)
