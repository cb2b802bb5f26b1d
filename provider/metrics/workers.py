"""WorkerCollector: an activity worker's counters, read at scrape time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from provider.metrics.worker_counters import COUNTERS, HasStats


class WorkerCollector(Collector):
    """Counters of one ActivityWorker or AsyncActivityWorker, labelled `worker`."""

    def __init__(self, worker: HasStats, name: str) -> None:
        self.worker = worker
        self.name = name

    def describe(self) -> Iterable[Any]:
        return []

    def collect(self) -> Iterator[CounterMetricFamily]:
        for field, metric, text in COUNTERS:
            family = CounterMetricFamily(metric, text, labels=["worker"])
            family.add_metric([self.name], float(getattr(self.worker.stats, field)))
            yield family
