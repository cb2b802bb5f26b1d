"""Prometheus metrics of a task hub (the `metrics` extra: prometheus_client).

    from prometheus_client import REGISTRY
    from provider.metrics import HubCollector, ProviderMetrics, WorkerCollector

    REGISTRY.register(HubCollector(url, ["orders"]))    # queues, leases, dead letters
    ProviderMetrics(REGISTRY).install()                 # every procedure call
    REGISTRY.register(WorkerCollector(worker, "orders-worker"))

`taskhub-pg metrics --port N` serves the HubCollector alone, for a
deployment with no Python app of its own.

OpenTelemetry instead (the `otel` extra): provider.metrics.opentelemetry.
Names are imported on first use, so that either extra works without the other.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the types, for users' type checkers
    from provider.metrics.collector import HubCollector, serve
    from provider.metrics.provider_metrics import ProviderMetrics
    from provider.metrics.workers import WorkerCollector

_WHERE = {
    "HubCollector": "provider.metrics.collector",
    "serve": "provider.metrics.collector",
    "ProviderMetrics": "provider.metrics.provider_metrics",
    "WorkerCollector": "provider.metrics.workers",
}
__all__ = ["HubCollector", "ProviderMetrics", "WorkerCollector", "serve"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'provider.metrics' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
