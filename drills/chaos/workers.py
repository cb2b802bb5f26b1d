"""The runtime worker processes of one side: started, SIGKILLed, replaced, stopped."""

from __future__ import annotations

import contextlib
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
REPLACEMENT_READY_TIMEOUT_S = 15.0


class WorkerStartError(RuntimeError):
    """A worker process did not report ready in time."""


class WorkerPool:
    """`size` workers on one schema; each logs to a file of its own in `log_dir`."""

    def __init__(
        self,
        url: str,
        schema: str,
        size: int,
        log_dir: Path,
        module: str = "drills.chaos.worker",
    ) -> None:
        self._module = module  # python -m MODULE URL SCHEMA LOG_FILE READY_FILE
        self._url = url
        self._schema = schema
        self._size = size
        self.log_dir = log_dir
        self._processes: list[subprocess.Popen[bytes]] = []
        self._lock = threading.Lock()  # the killer thread and the runner's cleanup
        self.started = 0
        self.killed = 0

    def start(self, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start every worker and wait until each one runs its runtime."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fresh = [self._spawn() for _ in range(self._size)]
        deadline = time.monotonic() + ready_timeout_s
        for process, ready in fresh:
            self._wait_ready(process, ready, max(0.1, deadline - time.monotonic()))

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL a random worker (mid-turn, mid-activity or idle) and start another."""
        with self._lock:
            live = [p for p in self._processes if p.poll() is None]
            if live:
                victim = rng.choice(live)
                victim.kill()
                victim.wait()
                self.killed += 1
            replacement, ready = self._spawn()
        # Not fatal when the server is restarting: the worker keeps trying.
        with contextlib.suppress(WorkerStartError):
            self._wait_ready(replacement, ready, REPLACEMENT_READY_TIMEOUT_S)

    def pids(self) -> list[int]:
        """The live workers' process ids."""
        with self._lock:
            return [p.pid for p in self._processes if p.poll() is None]

    def stop(self) -> None:
        with self._lock:
            for process in self._processes:
                if process.poll() is None:
                    process.kill()
                process.wait()
            self._processes.clear()

    def _spawn(self) -> tuple[subprocess.Popen[bytes], Path]:
        self.started += 1
        log = self.log_dir / f"worker-{self.started}.log"
        ready = self.log_dir / f"worker-{self.started}.ready"
        with log.open("ab") as output:  # the child keeps its own descriptor
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    self._module,
                    self._url,
                    self._schema,
                    str(log),
                    str(ready),
                ],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        self._processes.append(process)
        return process, ready

    @staticmethod
    def _wait_ready(process: subprocess.Popen[bytes], ready: Path, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and process.poll() is None:
            if ready.exists():
                return
            time.sleep(0.05)
        raise WorkerStartError(f"worker {process.pid} not ready within {timeout_s:.0f} s")
