"""The application during a deploy: starts orchestrations at a steady rate and
raises events, half through duroxide's own Client and half through our
TaskHub, with no retry, so that every error a deploy causes is seen."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import duroxide

from drills.chaos.workload import PIPELINE
from drills.deploy_drill.worker import EVENT, WAITER, WAITING
from drills.harness import DueEvents, error_line, paced, waits_for_event
from provider import TaskHub

EVENT_AFTER_S = 0.5  # then every RECHECK_S until the waiter says it subscribed
RECHECK_S = 0.25
EVERY_NTH_WAITS = 4


@dataclass
class ApplicationCalls:
    pipelines: dict[str, int] = field(default_factory=dict)  # instance -> n
    waiters: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)


class Application(threading.Thread):
    def __init__(self, url: str, schema: str, prefix: str, rate_per_s: float) -> None:
        super().__init__(daemon=True, name=f"application-{schema}")
        self._runtime_client = duroxide.Client(
            duroxide.PostgresProvider.connect_with_schema(url, schema)
        )
        self._hub = TaskHub.connect(url, schema, application_name="drill-app")
        self._prefix = prefix
        self._rate_per_s = rate_per_s
        self._stopping = threading.Event()
        self._events = DueEvents(
            self._subscribed, lambda i: self._call(self._raise, i), EVENT_AFTER_S, RECHECK_S
        )
        self.calls = ApplicationCalls()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop starting; raise the events still due, so every waiter can end."""
        self._stopping.set()
        self.join()
        deadline = time.monotonic() + timeout_s
        while self._events and time.monotonic() < deadline:
            self._events.raise_due()
            time.sleep(RECHECK_S / 5)
        self._hub.close()

    def run(self) -> None:
        for n in paced(self._rate_per_s, self._stopping):
            self._events.raise_due()
            instance = f"{self._prefix}-{n}"
            waits = n % EVERY_NTH_WAITS == 0
            # A start that failed is an error counted, with nothing to wait for.
            if self._call(self._start, instance, WAITER if waits else PIPELINE, n):
                (self.calls.waiters if waits else self.calls.pipelines)[instance] = n
                if waits:
                    self._events.add(instance)

    def _subscribed(self, instance: str) -> bool:
        status: list[Any] = []
        self._call(lambda: status.append(self._hub.get_custom_status(instance)))
        return bool(status) and waits_for_event(status[0], WAITING)

    def _start(self, instance: str, name: str, n: int) -> None:
        if n % 2:
            self._runtime_client.start_orchestration(instance, name, n)
        else:
            self._hub.start_orchestration(instance, name, n)

    def _raise(self, instance: str) -> None:
        if int(instance.rsplit("-", 1)[1]) % 8 == 0:
            self._runtime_client.raise_event(instance, EVENT, "go")
        else:
            self._hub.raise_event(instance, EVENT, "go")

    def _call(self, call: Callable[..., None], *args: Any) -> bool:
        """Whether the call succeeded; an error is counted, as the application saw it."""
        self.calls.calls += 1
        try:
            call(*args)
            return True
        except Exception as error:
            self.calls.errors[error_line(error)] += 1
            return False
