"""The drill's work: an order that chains an activity the runtime serves, a
short timer and an activity our ActivityWorker serves (tagged `python`).

Each activity notes every execution in a file of its process's own (one line
`name instance`), so that the drill counts the activities that ran more than
once for an instance: work a failover made redo.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

from provider import ActivityContext

ORDER = "FailoverOrder"
RESERVE = "Reserve"  # the runtime's
SHIP = "Ship"  # ours
PYTHON_TAG = "python"
TIMER_MS = 50
# Every LONG_EVERY-th order ships for LONG_S: long enough that our worker
# renews its lease (every third of the lease) across the failover.
LONG_EVERY = 5
LONG_S = 5.0
SHORT_S = 0.02

Turn = Generator[Any, Any, Any]


class RunLog:
    """Appends `name instance` for every execution to one file (threads share it)."""

    path: Path | None = None
    _lock = threading.Lock()

    @classmethod
    def note(cls, name: str, instance: str) -> None:
        if cls.path is None:
            return
        with cls._lock, cls.path.open("a") as runs:
            runs.write(f"{name} {instance}\n")


def runs_file(log_file: str) -> Path:
    """Where the process that logs to log_file notes its executions."""
    return Path(log_file).with_suffix(".runs")


def executions(files: Iterable[Path]) -> Counter[tuple[str, str]]:
    """(activity, instance) -> how many times it ran, over every process's file."""
    found: Counter[tuple[str, str]] = Counter()
    for path in files:
        for line in path.read_text().splitlines():
            name, _, instance = line.partition(" ")
            found[(name, instance)] += 1
    return found


def number(instance: str) -> int:
    return int(instance.rsplit("-", 1)[1])


# -- the activities ---------------------------------------------------------------


def reserve(_ctx: Any, instance: str) -> str:
    RunLog.note(RESERVE, instance)
    return f"reserved {instance}"


def ship(ctx: ActivityContext, instance: str) -> str:
    RunLog.note(SHIP, instance)
    # Work that takes a while; stopped early if the lease is lost.
    ctx.token.wait(LONG_S if number(instance) % LONG_EVERY == 0 else SHORT_S)
    return f"shipped {instance}"


# -- the orchestration --------------------------------------------------------------


def order(ctx: Any, instance: str) -> Turn:
    reserved = yield ctx.schedule_activity(RESERVE, instance)
    yield ctx.schedule_timer(TIMER_MS)
    shipped = yield ctx.schedule_activity(SHIP, instance).with_tag(PYTHON_TAG)
    return {"reserved": reserved, "shipped": shipped}


def expected_output(instance: str) -> dict[str, str]:
    return {"reserved": f"reserved {instance}", "shipped": f"shipped {instance}"}


def register_with_runtime(runtime: Any) -> None:
    runtime.register_activity(RESERVE, reserve)
    runtime.register_orchestration(ORDER, order)
