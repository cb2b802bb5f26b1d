"""The application: starts orchestrations at a steady rate through our
TaskHub, in the workload's mix, and raises each approval's event once the
instance says it waits for it. Nothing is retried: every error is counted.

The start time of every instance is kept until the sampler takes it with the
instance's completion (start-to-completion is measured from the call).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drills.harness import DueEvents, error_line, paced, waits_for_event
from drills.soak import workload
from provider import TaskHub

APPLICATION_NAME = "soak-app"
EVENT_AFTER_S = 0.3  # then every RECHECK_S until the instance subscribed
RECHECK_S = 0.2


@dataclass(frozen=True)
class Started:
    kind: str
    at_ms: float  # Unix epoch milliseconds, as the server's completed_at


class StartBook:
    """Each instance's start, kept until the completions reader takes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, Started] = {}

    def add(self, instance: str, started: Started) -> None:
        with self._lock:
            self._records[instance] = started

    def forget(self, instance: str) -> None:
        with self._lock:
            self._records.pop(instance, None)

    def take_started(self, instances: list[str]) -> dict[str, Started]:
        """The start records of these instances, forgotten here."""
        with self._lock:
            return {i: s for i in instances if (s := self._records.pop(i, None)) is not None}

    def in_flight(self) -> int:
        with self._lock:
            return len(self._records)

    def stuck(self, started_before_ms: float) -> int:
        """Instances started before then that have not ended (or not been seen to)."""
        with self._lock:
            return sum(1 for s in self._records.values() if s.at_ms < started_before_ms)


class Application(threading.Thread):
    def __init__(self, url: str, schema: str, rate_per_s: float) -> None:
        super().__init__(daemon=True, name="soak-application")
        self._hub = TaskHub.connect(url, schema, application_name=APPLICATION_NAME)
        self._rate_per_s = rate_per_s
        self._stopping = threading.Event()
        self._events = DueEvents(
            self._subscribed,
            lambda i: self._call(self._hub.raise_event, i, workload.EVENT, "yes"),
            EVENT_AFTER_S,
            RECHECK_S,
        )
        self.book = StartBook()
        self.starts = 0
        self.errors: Counter[str] = Counter()

    def stop(self) -> None:
        self._stopping.set()
        self.join()
        self._hub.close()

    def run(self) -> None:
        for n in paced(self._rate_per_s, self._stopping):
            self._events.raise_due()
            kind = workload.kind_of(n)
            instance = f"soak-{n}"
            self.book.add(instance, Started(kind, time.time() * 1000.0))
            if not self._call(self._hub.start_orchestration, instance, kind, n):
                self.book.forget(instance)
            elif kind == workload.APPROVAL:
                self._events.add(instance)
            self.starts += 1

    def _subscribed(self, instance: str) -> bool:
        status: list[Any] = []
        self._call(lambda: status.append(self._hub.get_custom_status(instance)))
        return bool(status) and waits_for_event(status[0], workload.WAITING)

    def _call(self, call: Callable[..., Any], *args: Any) -> bool:
        try:
            call(*args)
            return True
        except Exception as error:
            self.errors[error_line(error)] += 1
            return False
