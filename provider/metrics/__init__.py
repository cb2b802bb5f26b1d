"""Prometheus metrics of a task hub (the `metrics` extra: prometheus_client).

    from prometheus_client import REGISTRY
    from provider.metrics import HubCollector, ProviderMetrics, WorkerCollector

    REGISTRY.register(HubCollector(url, ["orders"]))    # queues, leases, dead letters
    ProviderMetrics(REGISTRY).install()                 # every procedure call
    REGISTRY.register(WorkerCollector(worker, "orders-worker"))

`taskhub-pg metrics --port N` serves the HubCollector alone, for a
deployment with no Python app of its own.
"""

from provider.metrics.calls import ProviderMetrics
from provider.metrics.collector import HubCollector, serve
from provider.metrics.workers import WorkerCollector

__all__ = ["HubCollector", "ProviderMetrics", "WorkerCollector", "serve"]
