"""The same call metrics and worker counters as OpenTelemetry instruments
(the `otel` extra: opentelemetry-api; the application brings the SDK and its
exporter).

    from provider.metrics.opentelemetry import OpenTelemetryMetrics
    otel = OpenTelemetryMetrics(meter_provider).install()   # every procedure call
    otel.observe_worker(worker, "orders-worker")            # its counters, read at collection
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from provider.client.call_observers import add_call_observer, remove_call_observer
from provider.errors import TaskHubError
from provider.metrics.worker_counters import COUNTERS, HasStats


class OpenTelemetryMetrics:
    """duroxide.provider.operation.duration (s) {operation, status} and
    duroxide.provider.errors {operation, error_type}; worker counters as
    observable counters taskhub.worker.<field> {worker}."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        provider = meter_provider or metrics.get_meter_provider()
        self.meter = provider.get_meter("taskhub-pg")
        self.duration = self.meter.create_histogram(
            "duroxide.provider.operation.duration",
            unit="s",
            description="duration of a provider operation (one stored-procedure call)",
        )
        self.errors = self.meter.create_counter(
            "duroxide.provider.errors",
            description="provider operations that failed, by error class",
        )
        self._workers: list[tuple[HasStats, str]] = []
        for field, name, text in COUNTERS:
            self.meter.create_observable_counter(
                name.replace("taskhub_worker_", "taskhub.worker."),
                callbacks=[self._reader(field)],
                description=text,
            )

    def _reader(self, field: str) -> Any:
        def read(options: CallbackOptions) -> Iterable[Observation]:
            return [
                Observation(getattr(worker.stats, field), {"worker": name})
                for worker, name in self._workers
            ]

        return read

    def observe(
        self, schema: str, operation: str, seconds: float, failure: TaskHubError | None
    ) -> None:
        status = "success" if failure is None else "error"
        self.duration.record(seconds, {"operation": operation, "status": status})
        if failure is not None:
            self.errors.add(1, {"operation": operation, "error_type": type(failure).__name__})

    def install(self) -> OpenTelemetryMetrics:
        add_call_observer(self.observe)
        return self

    def uninstall(self) -> None:
        remove_call_observer(self.observe)

    def observe_worker(self, worker: HasStats, name: str) -> None:
        self._workers.append((worker, name))
