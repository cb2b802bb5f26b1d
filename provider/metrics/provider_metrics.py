"""ProviderMetrics: every procedure call's duration and failures, named as
duroxide names its provider metrics."""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from provider.client.call_observers import add_call_observer, remove_call_observer
from provider.errors import TaskHubError

# From 0.5 ms (a renewal on a quiet server) to 10 s (a fetch at a statement timeout).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ProviderMetrics:
    """duroxide_provider_operation_duration_seconds{operation, status} and
    duroxide_provider_errors_total{operation, error_type}, for every TaskHub
    and AsyncTaskHub of the process once install()ed."""

    def __init__(self, registry: CollectorRegistry = REGISTRY) -> None:
        self.duration = Histogram(
            "duroxide_provider_operation_duration_seconds",
            "duration of a provider operation (one stored-procedure call)",
            ["operation", "status"],
            buckets=BUCKETS,
            registry=registry,
        )
        self.errors = Counter(
            "duroxide_provider_errors_total",
            "provider operations that failed, by error class",
            ["operation", "error_type"],
            registry=registry,
        )

    def observe(
        self, schema: str, operation: str, seconds: float, failure: TaskHubError | None
    ) -> None:
        status = "success" if failure is None else "error"
        self.duration.labels(operation, status).observe(seconds)
        if failure is not None:
            self.errors.labels(operation, type(failure).__name__).inc()

    def install(self) -> ProviderMetrics:
        add_call_observer(self.observe)
        return self

    def uninstall(self) -> None:
        remove_call_observer(self.observe)
