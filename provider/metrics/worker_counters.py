"""The worker counters both metric families publish (no metrics library here)."""

from __future__ import annotations

from typing import Protocol

from provider.worker.core import WorkerStats

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


class HasStats(Protocol):
    """An ActivityWorker or AsyncActivityWorker."""

    stats: WorkerStats
