"""The application: starts orchestrations at a steady rate through our
TaskHub, in the workload's mix, and raises each approval's event once the
instance says it waits for it. Nothing is retried: every error is counted.

The start time of every instance is kept until the sampler takes it with the
instance's completion (start-to-completion is measured from the call).
"""

from __future__ import annotations

import heapq
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drills.soak import workload
from provider import TaskHub

APPLICATION_NAME = "soak-app"
EVENT_AFTER_S = 0.3  # then every RECHECK_S until the instance subscribed
RECHECK_S = 0.2
MESSAGE_CHARS = 160


@dataclass(frozen=True)
class Started:
    kind: str
    at_ms: float  # Unix epoch milliseconds, as the server's completed_at


class Application(threading.Thread):
    def __init__(self, url: str, schema: str, rate_per_s: float) -> None:
        super().__init__(daemon=True, name="soak-application")
        self._hub = TaskHub.connect(url, schema, application_name=APPLICATION_NAME)
        self._interval_s = 1.0 / rate_per_s
        self._stopping = threading.Event()
        self._events: list[tuple[float, str]] = []  # (due, instance): a heap
        self._lock = threading.Lock()
        self._start_records: dict[str, Started] = {}
        self.starts = 0
        self.errors: Counter[str] = Counter()

    def take_started(self, instances: list[str]) -> dict[str, Started]:
        """The start records of these instances, forgotten here."""
        with self._lock:
            return {i: s for i in instances if (s := self._start_records.pop(i, None)) is not None}

    def in_flight(self) -> int:
        with self._lock:
            return len(self._start_records)

    def stuck(self, started_before_ms: float) -> int:
        """Instances started before then that have not ended (or not been seen to)."""
        with self._lock:
            return sum(1 for s in self._start_records.values() if s.at_ms < started_before_ms)

    def stop(self) -> None:
        self._stopping.set()
        self.join()
        self._hub.close()

    def run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stopping.is_set():
            self._raise_due_events()
            n += 1
            kind = workload.kind_of(n)
            instance = f"soak-{n}"
            started = Started(kind, time.time() * 1000.0)
            with self._lock:
                self._start_records[instance] = started
            if not self._call(self._hub.start_orchestration, instance, kind, n):
                with self._lock:
                    del self._start_records[instance]
            elif kind == workload.APPROVAL:
                heapq.heappush(self._events, (time.monotonic() + EVENT_AFTER_S, instance))
            self.starts += 1
            next_at += self._interval_s
            self._stopping.wait(max(0.0, next_at - time.monotonic()))

    def _raise_due_events(self) -> None:
        due: list[str] = []
        while self._events and self._events[0][0] <= time.monotonic():
            due.append(heapq.heappop(self._events)[1])
        for instance in due:
            if self._subscribed(instance):
                self._call(self._hub.raise_event, instance, workload.EVENT, "yes")
            else:
                heapq.heappush(self._events, (time.monotonic() + RECHECK_S, instance))

    def _subscribed(self, instance: str) -> bool:
        status: list[Any] = []
        self._call(lambda: status.append(self._hub.get_custom_status(instance)))
        found = status[0].status if status and status[0] is not None else None
        return found in (workload.WAITING, json.dumps(workload.WAITING))

    def _call(self, call: Callable[..., Any], *args: Any) -> bool:
        try:
            call(*args)
            return True
        except Exception as error:
            self.errors[f"{type(error).__name__}: {error}"[:MESSAGE_CHARS]] += 1
            return False
