"""Push wakeups through the pooler against the direct path: an idle
ActivityWorker with push wakeups on each path (a schema each), an activity
queued at a random moment, the time until its handler starts (as
bench/wakeups.py measures it). Samples alternate between the paths, so both
see the same machine."""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from bench.wakeups import TimedWorker
from devkit.workloads.work_items import activity_execute
from provider import TaskHub

TARGET_RATIO = 2.0  # the pooled path's p50 within 2x of the direct path's
IDLE_S = (0.2, 0.8)  # between samples: the poll has backed off, as in bench/wakeups.py


@dataclass
class Latency:
    samples_ms: dict[str, list[float]] = field(default_factory=dict)  # path -> samples

    def p50(self, path: str) -> float:
        return statistics.median(self.samples_ms[path])

    def ratio(self, path: str, against: str) -> float:
        return self.p50(path) / self.p50(against)


def measure(paths: dict[str, tuple[str, str, dict[str, Any]]], samples: int) -> Latency:
    """`paths`: name -> (url, schema, hub settings); `samples` per path."""
    latency = Latency({name: [] for name in paths})
    hubs = {name: TaskHub.connect(url, schema, **s) for name, (url, schema, s) in paths.items()}
    timed = {name: TimedWorker(hub, push=True) for name, hub in hubs.items()}
    rng = random.Random(38)
    try:
        for worker in timed.values():
            worker.worker.start()
        names = list(paths)
        for n in range(samples):
            for name in names if n % 2 == 0 else names[::-1]:
                time.sleep(rng.uniform(*IDLE_S))  # idle on purpose: a wakeup from idle
                sent = time.monotonic()
                hubs[name].enqueue_worker_work(activity_execute(f"latency-{n}", n, name="Go"))
                latency.samples_ms[name].append((timed[name].start_of(n) - sent) * 1000)
    finally:
        for name in paths:
            timed[name].worker.stop()
            hubs[name].close()
    return latency
