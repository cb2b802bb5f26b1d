"""WorkerCollector: an activity worker's counters, read at scrape time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from provider.worker.activity_worker import WorkerStats

COUNTERS = (
    # (WorkerStats field, metric name without _total, help)
    ("started", "taskhub_worker_activities_started", "activity handlers started"),
    ("completed", "taskhub_worker_activities_completed", "activities acked as completed"),
    ("failed", "taskhub_worker_activities_failed", "activities acked as failed"),
    ("poisoned", "taskhub_worker_activities_poisoned", "items failed as poison, not run"),
    ("lost", "taskhub_worker_leases_lost", "leases lost while running (the handler cancelled)"),
    ("given_back", "taskhub_worker_items_given_back", "items abandoned at shutdown"),
    ("renewals", "taskhub_worker_lease_renewals", "lease renewals made"),
    ("renewal_errors", "taskhub_worker_lease_renewal_errors", "renewals that failed"),
)


class _HasStats(Protocol):
    stats: WorkerStats


class WorkerCollector(Collector):
    """Counters of one ActivityWorker or AsyncActivityWorker, labelled `worker`."""

    def __init__(self, worker: _HasStats, name: str) -> None:
        self.worker = worker
        self.name = name

    def describe(self) -> Iterable[Any]:
        return []

    def collect(self) -> Iterator[CounterMetricFamily]:
        for field, metric, text in COUNTERS:
            family = CounterMetricFamily(metric, text, labels=["worker"])
            family.add_metric([self.name], float(getattr(self.worker.stats, field)))
            yield family
