"""The lines the workers logged since the last look, per event: the
runtime's WARN and ERROR lines, our worker's WARNING and above."""

from __future__ import annotations

import re
from pathlib import Path

from drills.harness import ANSI, PYTHON_PROBLEM, RUNTIME_PROBLEM


class LogTail:
    """Lines matching `problem` in the *.log files of a folder, each read once."""

    def __init__(self, folder: Path, problem: re.Pattern[str]) -> None:
        self._folder = folder
        self._problem = problem
        self._read: dict[Path, int] = {}  # file -> bytes already read

    def skip(self) -> None:
        """Forget what is there now: the next look starts from here."""
        self.new_problems()

    def new_problems(self) -> list[str]:
        found: list[str] = []
        for path in sorted(self._folder.glob("*.log")):
            with path.open("rb") as log:
                log.seek(self._read.get(path, 0))
                data = log.read()
            complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits
            self._read[path] = self._read.get(path, 0) + len(complete)
            for raw in complete.decode(errors="replace").splitlines():
                line = ANSI.sub("", raw).strip()
                if self._problem.search(line):
                    found.append(line)
        return found


def runtime_tail(folder: Path) -> LogTail:
    return LogTail(folder, RUNTIME_PROBLEM)


def python_tail(folder: Path) -> LogTail:
    return LogTail(folder, PYTHON_PROBLEM)
