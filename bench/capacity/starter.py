"""Starts the bench's orchestrations at a steady rate through the released
runtime's own client, the same on both sides, and keeps each start's time
until the completions reader takes it (start-to-completion is measured from
the call). Nothing is retried: every error is counted."""

from __future__ import annotations

import threading
import time
from collections import Counter

import duroxide

from bench.capacity import workload
from drills.harness import error_line, paced
from drills.soak.application import StartBook, Started

APPLICATION_NAME = "capacity-app"


class Starter(threading.Thread):
    def __init__(self, url: str, schema: str, rate_per_s: float) -> None:
        super().__init__(daemon=True, name="capacity-starter")
        provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
        self._client = duroxide.Client(provider)
        self._rate_per_s = rate_per_s
        self._stopping = threading.Event()
        self.book = StartBook()
        self.starts = 0
        self.errors: Counter[str] = Counter()

    def stop(self) -> None:
        self._stopping.set()
        self.join()

    def run(self) -> None:
        for n in paced(self._rate_per_s, self._stopping):
            instance = f"cap-{n}"
            self.book.add(instance, Started(workload.ORDER, time.time() * 1000.0))
            try:
                self._client.start_orchestration(instance, workload.ORDER, n)
                self.starts += 1
            except Exception as error:  # counted, not retried: the bench's verdict
                self.errors[error_line(error)] += 1
                self.book.forget(instance)
