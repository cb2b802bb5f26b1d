"""/healthz of `taskhub-pg metrics`: 200 while the hub is read, 503 while it
cannot be (the database down, the schema gone), and since when; the log says
why (libpq's words, naming the host, port and user: never in the answer)
once per change of state, not once per scrape."""

from __future__ import annotations

import json
import logging
import subprocess
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any

import psycopg
import pytest

from provider.metrics import HubCollector
from provider.testing.embedded_pg import free_port
from tests.support.db import new_schema_name
from tests.support.metrics_server import metrics_server
from tests.support.templates import SchemaTemplates


def get(url: str) -> tuple[int, str]:
    """The status and body, 503 included (urllib raises on it)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def healthz(base: str) -> tuple[int, dict[str, Any]]:
    status, body = get(base + "/healthz")
    return status, json.loads(body)


def stopped_log(server: subprocess.Popen[str]) -> list[str]:
    """Stop the server; what it logged on stderr, line by line."""
    server.terminate()
    _, err = server.communicate(timeout=10)
    return err.splitlines()


def test_healthz_is_200_while_the_hub_is_read(database_url: str, hub_schema: str) -> None:
    with metrics_server(database_url, hub_schema) as (base, _):
        status, body = healthz(base)
    assert status == 200
    assert body["status"] == "up"
    assert [(s["schema"], s["up"]) for s in body["schemas"]] == [(hub_schema, True)]


def test_healthz_is_503_while_the_database_is_unreachable_and_the_reason_is_logged_only() -> None:
    port = free_port()  # nothing listens there
    closed = f"postgresql://healthz_reader@127.0.0.1:{port}/postgres"
    with metrics_server(closed, "orders") as (base, server):
        status, text = get(base + "/healthz")
        body = json.loads(text)
        metrics_status, metrics = get(base + "/metrics")
        assert healthz(base)[1]["schemas"][0]["since"] == body["schemas"][0]["since"]
        log = stopped_log(server)
    assert status == 503 and body["status"] == "down"
    (state,) = body["schemas"]
    assert set(state) == {"schema", "up", "since"}
    assert state["schema"] == "orders" and state["up"] is False
    datetime.fromisoformat(state["since"])
    # No host, port or user for whoever reaches /healthz (libpq names all three).
    for told in ("127.0.0.1", str(port), "healthz_reader", "Connection refused"):
        assert told not in text
    # /metrics still answers, and says the hub is down
    assert metrics_status == 200 and 'taskhub_up{schema="orders"} 0.0' in metrics
    # three reads, one line saying why
    (warning,) = [line for line in log if "WARNING" in line]
    assert "schema orders cannot be read: OperationalError: connection failed" in warning
    assert "Connection refused" in warning and f"port {port}" in warning


def test_each_change_of_state_is_logged_once(
    database_url: str, schema_templates: SchemaTemplates, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("hz")  # not there yet: the hub cannot be read
    with metrics_server(database_url, schema) as (base, server):
        for _ in range(3):
            assert healthz(base)[0] == 503
        get(base + "/metrics")
        schema_templates.create(schema)
        for _ in range(2):
            assert healthz(base)[0] == 200
        sql.execute(f'DROP SCHEMA "{schema}" CASCADE')
        status, body = healthz(base)
        get(base + "/metrics")
        log = stopped_log(server)
    assert status == 503 and "reason" not in body["schemas"][0]
    changes = [line for line in log if " provider.metrics: " in line]
    assert [line.split()[2] for line in changes] == ["WARNING", "INFO", "WARNING"], log
    assert all("does not exist" in line for line in changes if "WARNING" in line)
    assert f"schema {schema} is read again after" in changes[1]


def test_a_collector_logs_the_reason_with_its_fields(caplog: pytest.LogCaptureFixture) -> None:
    """An application's own HubCollector logs the same, once, to the
    application's logging."""
    collector = HubCollector(f"postgresql://x@127.0.0.1:{free_port()}/x", ["orders"], timeout_s=1)
    with caplog.at_level(logging.INFO, logger="provider.metrics"):
        for _ in range(3):
            list(collector.collect())
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert getattr(record, "event", None) == "metrics.hub_down"
    assert getattr(record, "schema", None) == "orders"
    assert "Connection refused" in str(getattr(record, "reason", ""))
    assert not collector.health.healthy()
