"""HubCollector: the runbook's views (provider/client/hub_views.py), read at
each scrape on a connection of its own; and `serve`, the server of
`taskhub-pg metrics`: /metrics, and /healthz that reads the hub as a scrape
would (503 while it cannot; the reason goes to the log).

A read is bounded (a connect timeout and a statement timeout) and one at a
time: requests that come while one runs share its result, so a burst of
scrapes against a slow database is one connection, not one each."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import socket
import sys
from collections.abc import Iterable, Iterator, Sequence
from socketserver import ThreadingMixIn
from threading import Thread
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import psycopg
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from psycopg.conninfo import conninfo_to_dict

from provider.client.connecting import check_url
from provider.client.on_connection import OnConnection
from provider.client.pooling import (
    PINNED_PATH_OPTION,
    behind_a_pooler,
    bounded_transaction,
    refused_startup_option,
    url_options,
)
from provider.client.session_standing import refuse_a_privileged_session
from provider.errors import InvalidInput, TaskHubError
from provider.inert_text import visible
from provider.logs import fields
from provider.masking import passwords_of
from provider.metrics.exposure import (
    is_loopback,
    loopback_hosts_only,
    refuse_unless_protected,
    require_bearer,
)
from provider.metrics.health import HubHealth, HubState, log
from provider.metrics.single_flight import SingleFlight
from provider.schema_name import InvalidSchemaName, validate_schema_name
from provider.types import INSTANCE_STATUSES

QUEUE_GAUGES = (
    # (view column, metric name, help)
    ("ready", "taskhub_queue_ready", "messages that can be fetched now"),
    ("scheduled", "taskhub_queue_scheduled", "messages visible later (timers, back-offs)"),
    ("leased", "taskhub_queue_leased", "messages under a live lease"),
    ("max_attempt_count", "taskhub_queue_max_attempt_count", "the highest delivery count"),
    ("dead_letters", "taskhub_dead_letters", "messages moved to dead_letters"),
)


def _gauge(name: str, text: str, *labels: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, text, labels=["schema", *labels])


class HubFamilies:
    """The gauges of one scrape, filled schema by schema."""

    def __init__(self) -> None:
        self.up = _gauge("taskhub_up", "1 when the last scrape read the hub")
        self.queues = {name: _gauge(name, text, "queue") for _, name, text in QUEUE_GAUGES}
        self.age = _gauge(
            "taskhub_queue_oldest_ready_age_seconds",
            "how long the oldest ready message has waited",
            "queue",
        )
        self.leases = _gauge("taskhub_leases", "leases held now", "kind", "state")
        self.poison = _gauge("taskhub_poison_candidates", "messages delivered again and again")
        self.stuck = _gauge(
            "taskhub_stuck_instances", "running instances with nothing queued, scheduled or leased"
        )
        # Every status, 0 included, so that the first failure is a rise of a
        # series that existed (delta() needs two samples).
        self.instances = _gauge(
            "taskhub_instances",
            "instances by their current execution's status (no series when the count"
            " takes over a second: a hub too large to count at each scrape)",
            "status",
        )
        # Flow control (docs/flow-control.md): one series per rule.
        self.flow_paused = _gauge(
            "taskhub_flow_paused",
            "1 while the key is paused (handed out to nobody)",
            "kind",
            "name",
        )
        self.flow_limit = _gauge(
            "taskhub_flow_limit", "the key's concurrency limit (max_running)", "kind", "name"
        )
        self.flow_running = _gauge(
            "taskhub_flow_running", "the key's slots held by a live lease", "kind", "name"
        )
        self.flow_turns = _gauge(
            "taskhub_flow_turns",
            "the label's turn slots held by a live instance lease",
            "kind",
            "name",
        )

    def all(self) -> Iterator[GaugeMetricFamily]:
        yield self.up
        yield from self.queues.values()
        yield from (self.age, self.leases, self.poison, self.stuck, self.instances)
        yield from (self.flow_paused, self.flow_limit, self.flow_running, self.flow_turns)


APPLICATION_NAME = "taskhub-pg metrics"


class HubCollector(Collector):
    """Gauges of each schema's queues, leases, poison candidates and stuck
    instances, read from its views: one connection per read, and one read
    at a time (scrapes that come meanwhile share its result). `timeout_s`
    bounds the connect and each statement. `health` keeps what the last read
    of each schema found."""

    def __init__(self, url: str, schemas: Sequence[str], timeout_s: float = 5.0) -> None:
        check_url("HubCollector", url)  # a URL libpq would misread quotes its password
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise InvalidInput("HubCollector", "timeout_s must be a positive number of seconds")
        for schema in schemas:  # as the hub's plans take it: at once, not at each scrape
            try:
                validate_schema_name(schema)
            except InvalidSchemaName as error:
                raise InvalidInput("HubCollector", str(error)) from None
        self.url = url
        self.schemas = list(schemas)
        self.timeout_s = timeout_s
        self._bound_each_read = False  # a pooler in between (_connect)
        self.health = HubHealth(self.schemas, passwords_of(url))
        self._reads = SingleFlight(self._read_all)

    def describe(self) -> Iterable[Any]:
        return []  # read at scrape time only: registering does not touch the database

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from self._reads.run().all()

    def probe(self) -> list[HubState]:
        """Read the hub as a scrape does, for /healthz: the states it leaves."""
        self._reads.run()
        return self.health.states()

    def _read_all(self) -> HubFamilies:
        families = HubFamilies()
        conn: psycopg.Connection[Any] | None = None
        try:
            for schema in self.schemas:
                try:
                    if conn is None:
                        conn = self._connect()
                    # Every read, on whatever connection: a look taken at the
                    # start proves nothing about a database that came up later.
                    refuse_a_privileged_session(conn, schema, "taskhub-pg metrics")
                    with self._bounded(conn):
                        _read(conn, schema, families)
                except (psycopg.Error, TaskHubError) as error:
                    self.health.record(schema, _server_error(error))
                    families.up.add_metric([schema], 0)
                    if conn is not None and conn.broken:
                        conn.close()
                        conn = None  # the next schema connects again
                    continue
                self.health.record(schema, None)
                families.up.add_metric([schema], 1)
        finally:
            if conn is not None:
                conn.close()
        return families

    def _connect(self) -> psycopg.Connection[Any]:
        """A connection bounded by a startup option; behind a pooler, which
        refuses or drops that option, each read is bounded in a transaction
        of its own instead (SET LOCAL leaves nothing on a pooled session)."""
        settings = bounded_settings(self.url, self.timeout_s)
        try:
            conn = psycopg.connect(self.url, autocommit=True, prepare_threshold=None, **settings)
        except psycopg.OperationalError as error:
            if not refused_startup_option(error):
                raise
            del settings["options"]
            conn = psycopg.connect(self.url, autocommit=True, prepare_threshold=None, **settings)
            self._bound_each_read = True
            return conn
        self._bound_each_read = behind_a_pooler(conn)
        return conn

    @contextlib.contextmanager
    def _bounded(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        if not self._bound_each_read:
            yield
            return
        with bounded_transaction(conn, max(1, round(self.timeout_s * 1000))):
            yield


def bounded_settings(url: str, timeout_s: float) -> dict[str, Any]:
    """A read's connection: libpq's connect timeout (whole seconds, at least
    2), the pinned search_path and a statement timeout added to the URL's
    own options; named, unless the URL names it."""
    given = conninfo_to_dict(url)
    timeout_ms = max(1, round(timeout_s * 1000))
    options = " ".join(
        o for o in (url_options(url), PINNED_PATH_OPTION, f"-c statement_timeout={timeout_ms}") if o
    )
    settings: dict[str, Any] = {
        "connect_timeout": max(2, math.ceil(timeout_s)),
        "options": options,
    }
    if not given.get("application_name"):
        settings["application_name"] = APPLICATION_NAME
    return settings


def _server_error(error: BaseException) -> BaseException:
    """What the log names as the reason: the server's own error behind a
    read's TaskHubError (its class and words), else the error itself."""
    cause = error.__cause__
    return cause if isinstance(error, TaskHubError) and isinstance(cause, psycopg.Error) else error


def _read(conn: psycopg.Connection[Any], schema: str, families: HubFamilies) -> None:
    hub = OnConnection(conn, schema)
    for row in hub.run(hub.plans.queue_health()):
        for column, name, _ in QUEUE_GAUGES:
            value = getattr(row, column)
            families.queues[name].add_metric([schema, row.queue], float(value or 0))
        age_s = (row.oldest_ready_age_ms or 0) / 1000
        families.age.add_metric([schema, row.queue], age_s)
    counted = hub.run(hub.plans.lease_counts())
    for kind in ("orchestration", "activity"):
        for live, state in ((True, "live"), (False, "expired")):
            families.leases.add_metric([schema, kind, state], float(counted.get((kind, live), 0)))
    families.poison.add_metric([schema], float(hub.run(hub.plans.count_rows("poison"))))
    families.stuck.add_metric([schema], float(hub.run(hub.plans.count_rows("stuck"))))
    counts = hub.run(hub.plans.status_counts())
    if counts is not None:
        for status in INSTANCE_STATUSES:
            families.instances.add_metric([schema, status], float(counts.get(status, 0)))
    for rule in hub.run(hub.plans.flow_rules_of_any_revision()):
        # A stored name, inert: no control character reaches a scraper's terminal.
        key = [schema, rule.kind, visible(rule.name)]
        families.flow_paused.add_metric(key, 1.0 if rule.paused else 0.0)
        families.flow_running.add_metric(key, float(rule.running))
        families.flow_turns.add_metric(key, float(rule.turns))
        if rule.max_running is not None:
            families.flow_limit.add_metric(key, float(rule.max_running))


def healthz(collector: HubCollector, start_response: StartResponse) -> list[bytes]:
    """200 when every schema was read just now; else 503. Either way, for
    each schema, whether it is up and since when (JSON); why not is logged."""
    states = collector.probe()
    healthy = all(state.up for state in states)
    body = json.dumps(
        {"status": "up" if healthy else "down", "schemas": [s.as_json() for s in states]}
    ).encode()
    start_response(
        "200 OK" if healthy else "503 Service Unavailable",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
    )
    return [body]


def hub_app(collector: HubCollector, registry: CollectorRegistry) -> WSGIApplication:
    """/healthz from the collector; every other path is /metrics, as before."""
    metrics = make_wsgi_app(registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            return healthz(collector, start_response)
        result: Iterable[bytes] = metrics(environ, start_response)
        return result

    return app


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    """A slow scrape or probe (a database that does not answer) holds its own
    thread only."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr: a line per scrape would bury the state changes."""


def _log_to_stderr_unless_configured() -> None:
    """`taskhub-pg metrics` sets up no logging: without a handler Python
    prints warnings only, and the line saying a hub is back would be lost."""
    if log.hasHandlers():
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


def _warn_unless_loopback(address: str, port: int, token: str | None) -> None:
    if is_loopback(address) or token is not None:
        return
    log.warning(
        "metrics are served on %s port %s without authentication (--insecure-no-auth):"
        " whoever can reach it reads them",
        address,
        port,
        extra=fields("metrics.unauthenticated", address=address, port=port),
    )


def serve(
    url: str,
    schemas: Sequence[str],
    *,
    port: int,
    host: str = "127.0.0.1",
    timeout_s: float = 5.0,
    bearer_token: str | None = None,
    insecure_no_auth: bool = False,
) -> WSGIServer:
    """Serve /metrics and /healthz of a HubCollector in a registry of its own
    (in a thread); shutdown() stops it. This machine only unless `host` says
    otherwise; beyond loopback only with `bearer_token` (every request must
    send it) or `insecure_no_auth` (a warning is logged), else
    ExposedWithoutAuthentication before anything listens."""
    _log_to_stderr_unless_configured()
    family, _, _, _, sockaddr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    refuse_unless_protected(str(sockaddr[0]), port, bearer_token, insecure_no_auth)
    collector = HubCollector(url, schemas, timeout_s=timeout_s)
    registry = CollectorRegistry()
    registry.register(collector)

    class Server(_ThreadingServer):
        address_family = family  # an IPv6 host needs an IPv6 socket

    app = hub_app(collector, registry)
    if bearer_token is not None:
        app = require_bearer(app, bearer_token)
    elif not insecure_no_auth:  # loopback: only requests that name this machine
        app = loopback_hosts_only(app, host)
    server = make_server(str(sockaddr[0]), port, app, Server, handler_class=_QuietHandler)
    _warn_unless_loopback(str(sockaddr[0]), port, bearer_token)
    Thread(target=server.serve_forever, daemon=True, name="taskhub-metrics").start()
    return server
