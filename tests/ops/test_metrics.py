"""Metrics: `taskhub-pg metrics --port N` serves the hub's views, scraped
here while a worker runs and checked against the database; the provider's
call metrics and a worker's counters count what happened."""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from devkit.waiting import wait_until
from devkit.workloads.work_items import activity_execute
from provider import ActivityContext, ActivityWorker, InvalidInput, LockLost, TaskHub
from provider.metrics import HubCollector, ProviderMetrics, WorkerCollector
from tests.support.metrics_server import metrics_server

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, /, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


@pytest.fixture
def served(database_url: str, busy_hub: str) -> Iterator[str]:
    """`taskhub-pg metrics` on a free port, as a deployment would run it."""
    with metrics_server(database_url, busy_hub) as (base, _):
        yield base + "/metrics"


def scrape(url: str) -> Samples:
    return parse(urllib.request.urlopen(url, timeout=10).read().decode())


def test_a_scrape_during_a_workload_matches_the_database(
    served: str, busy_hub: str, hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    worker = ActivityWorker(hub, concurrency=2)
    release = threading.Event()

    @worker.activity("Slow")
    def slow(ctx: ActivityContext, _: Any) -> None:
        release.wait(10)  # runs until the test has scraped and read the database

    for n in range(4):
        hub.enqueue_worker_work(activity_execute("load", n, name="Slow"))
    with worker:
        try:
            wait_until(lambda: worker.stats.started == 2, message="two running, two ready")
            samples = scrape(served)
            truth: Any = sql.execute(
                f'SELECT queue, ready, leased, dead_letters FROM "{busy_hub}".taskhub_queue_health'
            ).fetchall()
            live: Any = sql.execute(
                f'SELECT count(*) FROM "{busy_hub}".taskhub_current_leases'
                " WHERE kind = 'activity' AND remaining_ms > 0"
            ).fetchone()
        finally:
            release.set()
    assert value(samples, "taskhub_up", schema=busy_hub) == 1
    for queue, ready, leased, dead in truth:
        labels = {"schema": busy_hub, "queue": queue}
        assert value(samples, "taskhub_queue_ready", **labels) == ready
        assert value(samples, "taskhub_queue_leased", **labels) == leased
        assert value(samples, "taskhub_dead_letters", **labels) == dead
    assert (
        value(samples, "taskhub_leases", schema=busy_hub, kind="activity", state="live") == live[0]
    )
    assert live[0] >= 2  # the two running, and the busy hub's leased activity
    assert value(samples, "taskhub_poison_candidates", schema=busy_hub) == 1
    assert value(samples, "taskhub_stuck_instances", schema=busy_hub) == 1


def test_an_unreachable_hub_scrapes_as_down() -> None:
    registry = CollectorRegistry()
    registry.register(HubCollector("postgresql://x@127.0.0.1:1/x", ["orders"], timeout_s=1))
    samples = parse(generate_latest(registry).decode())
    assert value(samples, "taskhub_up", schema="orders") == 0


def test_a_schema_the_hub_would_refuse_is_refused_before_any_scrape() -> None:
    with pytest.raises(InvalidInput, match="invalid schema name 'Orders'"):
        HubCollector("postgresql://x@127.0.0.1:1/x", ["Orders"], timeout_s=1)


def test_call_metrics_and_worker_counters_count_what_happened(hub: TaskHub) -> None:
    registry = CollectorRegistry()
    calls = ProviderMetrics(registry).install()
    worker = ActivityWorker(hub, concurrency=1)
    registry.register(WorkerCollector(worker, "w1"))
    worker.register("Go", lambda ctx, _: "went")
    try:
        with worker:
            for n in range(3):
                hub.enqueue_worker_work(activity_execute("m", n, name="Go"))
            wait_until(lambda: worker.stats.completed >= 3, timeout_s=10)
        with pytest.raises(LockLost):
            hub.ack_work_item("no-such-token", {"ActivityCompleted": {
                "instance": "m", "execution_id": 1, "id": 9, "result": "null"}})  # fmt: skip
    finally:
        calls.uninstall()
    samples = parse(generate_latest(registry).decode())
    assert value(samples, "taskhub_worker_activities_started_total", worker="w1") == 3
    assert value(samples, "taskhub_worker_activities_completed_total", worker="w1") == 3
    enqueued = value(
        samples,
        "duroxide_provider_operation_duration_seconds_count",
        operation="enqueue_worker_work",
        status="success",
    )
    assert enqueued == 3
    refused = value(
        samples, "duroxide_provider_errors_total", operation="ack_worker", error_type="LockLost"
    )
    assert refused == 1


def test_the_same_call_metrics_and_counters_as_opentelemetry_instruments(hub: TaskHub) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from provider.metrics.opentelemetry import OpenTelemetryMetrics

    reader = InMemoryMetricReader()
    otel = OpenTelemetryMetrics(MeterProvider(metric_readers=[reader])).install()
    worker = ActivityWorker(hub, concurrency=1)
    otel.observe_worker(worker, "w1")
    worker.register("Go", lambda ctx, _: "went")
    try:
        with worker:
            for n in range(2):
                hub.enqueue_worker_work(activity_execute("o", n, name="Go"))
            wait_until(lambda: worker.stats.completed >= 2, timeout_s=10)
        with pytest.raises(LockLost):
            hub.renew_work_item_lock("no-such-token", 1_000)
    finally:
        otel.uninstall()
    data = reader.get_metrics_data()
    assert data is not None
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    enqueues = [
        p for p in points["duroxide.provider.operation.duration"]
        if p.attributes == {"operation": "enqueue_worker_work", "status": "success"}
    ]  # fmt: skip
    assert enqueues and enqueues[0].count == 2
    errors = points["duroxide.provider.errors"]
    assert [(p.attributes["error_type"], p.value) for p in errors] == [("LockLost", 1)]
    completed = points["taskhub.worker.activities_completed"]
    assert [(p.attributes["worker"], p.value) for p in completed] == [("w1", 2)]


def test_flow_rules_are_published_with_their_slots_in_use(
    database_url: str, hub_schema: str, hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('activity', 'Charge', 3)")
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_pause_flow('activity', 'Mail')")
    hub.enqueue_worker_work(activity_execute("flow", 1, name="Charge"))
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    registry = CollectorRegistry()
    registry.register(HubCollector(database_url, [hub_schema], timeout_s=5))
    samples = parse(generate_latest(registry).decode())
    charge = {"schema": hub_schema, "kind": "activity", "name": "Charge"}
    mail = {"schema": hub_schema, "kind": "activity", "name": "Mail"}
    assert value(samples, "taskhub_flow_limit", **charge) == 3
    assert value(samples, "taskhub_flow_running", **charge) == 1
    assert value(samples, "taskhub_flow_paused", **charge) == 0
    assert value(samples, "taskhub_flow_paused", **mail) == 1
    hub.ack_work_item(lease.lock_token, None)


def test_a_rules_name_reaches_the_scrape_inert(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """Found by a fresh attacker: ESC and BEL in an activity's name went out
    raw in the label (Prometheus escapes only \\, " and the newline)."""
    name = "Charge\x1b[31mRED\x07"
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_pause_flow('activity', %s)", [name])
    registry = CollectorRegistry()
    registry.register(HubCollector(database_url, [hub_schema], timeout_s=5))
    text = generate_latest(registry).decode()
    assert "\x1b" not in text and "\x07" not in text
    samples = parse(text)
    inert = {"schema": hub_schema, "kind": "activity", "name": "Charge\\x1b[31mRED\\x07"}
    assert value(samples, "taskhub_flow_paused", **inert) == 1
