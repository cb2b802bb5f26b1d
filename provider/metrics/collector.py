"""HubCollector: the runbook's views, read at each scrape."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from wsgiref.simple_server import WSGIServer

import psycopg
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from psycopg import sql

QUEUE_GAUGES = (
    # (view column, metric name, help)
    ("ready", "taskhub_queue_ready", "messages that can be fetched now"),
    ("scheduled", "taskhub_queue_scheduled", "messages visible later (timers, back-offs)"),
    ("leased", "taskhub_queue_leased", "messages under a live lease"),
    ("max_attempt_count", "taskhub_queue_max_attempt_count", "the highest delivery count"),
    ("dead_letters", "taskhub_dead_letters", "messages moved to dead_letters"),
)


class HubCollector(Collector):
    """Gauges of each schema's queues, leases, poison candidates and stuck
    instances, read from its views (one short connection per scrape)."""

    def __init__(self, url: str, schemas: Sequence[str], timeout_s: float = 5.0) -> None:
        self.url = url
        self.schemas = list(schemas)
        self.timeout_s = timeout_s

    def describe(self) -> Iterable[Any]:
        return []  # read at scrape time only: registering does not touch the database

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "taskhub_up", "1 when the last scrape read the hub", labels=["schema"]
        )
        families = {
            name: GaugeMetricFamily(name, text, labels=["schema", "queue"])
            for _, name, text in QUEUE_GAUGES
        }
        age = GaugeMetricFamily(
            "taskhub_queue_oldest_ready_age_seconds",
            "how long the oldest ready message has waited",
            labels=["schema", "queue"],
        )
        leases = GaugeMetricFamily(
            "taskhub_leases", "leases held now", labels=["schema", "kind", "state"]
        )
        poison = GaugeMetricFamily(
            "taskhub_poison_candidates", "messages delivered again and again", labels=["schema"]
        )
        stuck = GaugeMetricFamily(
            "taskhub_stuck_instances",
            "running instances with nothing queued, scheduled or leased",
            labels=["schema"],
        )
        for schema in self.schemas:
            try:
                with psycopg.connect(
                    self.url, autocommit=True, connect_timeout=max(1, int(self.timeout_s))
                ) as conn:
                    self._read(conn, schema, families, age, leases, poison, stuck)
            except psycopg.Error:
                up.add_metric([schema], 0)
                continue
            up.add_metric([schema], 1)
        yield up
        yield from families.values()
        yield from (age, leases, poison, stuck)

    def _read(
        self,
        conn: psycopg.Connection[Any],
        schema: str,
        families: dict[str, GaugeMetricFamily],
        age: GaugeMetricFamily,
        leases: GaugeMetricFamily,
        poison: GaugeMetricFamily,
        stuck: GaugeMetricFamily,
    ) -> None:
        s = sql.Identifier(schema)
        with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
            for row in cur.execute(sql.SQL("SELECT * FROM {}.taskhub_queue_health").format(s)):
                for column, name, _ in QUEUE_GAUGES:
                    families[name].add_metric([schema, row["queue"]], float(row[column] or 0))
                age.add_metric([schema, row["queue"]], (row["oldest_ready_age_ms"] or 0) / 1000)
        counted = conn.execute(
            sql.SQL(
                "SELECT kind, remaining_ms > 0, count(*) FROM {}.taskhub_current_leases"
                " GROUP BY 1, 2"
            ).format(s)
        ).fetchall()
        for kind in ("orchestration", "activity"):
            for live, state in ((True, "live"), (False, "expired")):
                n = sum(c for k, alive, c in counted if k == kind and alive is live)
                leases.add_metric([schema, kind, state], float(n))
        for family, relation in (
            (poison, "taskhub_poison_candidates"),
            (stuck, "taskhub_stuck_instances"),
        ):
            found = conn.execute(
                sql.SQL("SELECT count(*) FROM {}.{}").format(s, sql.Identifier(relation))
            ).fetchone()
            family.add_metric([schema], float(found[0] if found else 0))


def serve(url: str, schemas: Sequence[str], *, port: int, host: str = "0.0.0.0") -> WSGIServer:
    """Serve /metrics with a HubCollector in a registry of its own (a thread)."""
    registry = CollectorRegistry()
    registry.register(HubCollector(url, schemas))
    server, _ = start_http_server(port, addr=host, registry=registry)
    return server
