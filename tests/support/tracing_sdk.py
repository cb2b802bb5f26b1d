"""The OpenTelemetry SDK as the tracing tests set it up: spans kept in memory."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from provider import tracing


def in_memory_sdk() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A TracerProvider that hands each finished span to an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@contextmanager
def provider_traced_by_sdk() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """The provider's spans on an in-memory SDK for a while (the process's
    global TracerProvider stays the API's no-op one)."""
    provider, exporter = in_memory_sdk()
    tracing.set_tracer_provider(provider)
    try:
        yield provider, exporter
    finally:
        tracing.set_tracer_provider(None)
        provider.shutdown()
