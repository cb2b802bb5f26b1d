"""Small shared pieces of the benchmarks: clocks, latency summaries, threads."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.string import TextLoader


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Latencies:
    samples_ms: list[float] = field(default_factory=list)

    def add(self, started: float) -> None:
        self.samples_ms.append((time.perf_counter() - started) * 1000)

    def extend(self, other: Latencies) -> None:
        self.samples_ms += other.samples_ms

    @classmethod
    def merged(cls, parts: list[Latencies]) -> Latencies:
        whole = cls()
        for part in parts:
            whole.extend(part)
        return whole

    def quantile(self, q: float) -> float:
        if not self.samples_ms:
            return 0.0
        ordered = sorted(self.samples_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def median(self) -> float:
        return statistics.median(self.samples_ms) if self.samples_ms else 0.0

    @property
    def maximum(self) -> float:
        return max(self.samples_ms, default=0.0)


def run_threads(count: int, body: Callable[[int], None]) -> float:
    """Run body(0..count-1) in threads; the wall time in seconds."""
    threads = [threading.Thread(target=body, args=(n,), daemon=True) for n in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


# The last event id of an instance's execution (the history's primary key):
# a dispatcher's next event id, whatever type out_history is (jsonb, or json
# on a hub made at revision 0017 or later).
LAST_EVENT_SQL = (
    "SELECT max(h.event_id) FROM {q}.history AS h WHERE h.instance_id = %s AND h.execution_id = %s"
)


def receive_history_as_text(conn: psycopg.Connection[Any]) -> None:
    """The turn as the text the server sends, whatever its type, as the
    runtime receives it: parsing it in Python is the client's cost, not the
    schema's."""
    for type_name in ("jsonb", "json"):
        conn.adapters.register_loader(type_name, TextLoader)
