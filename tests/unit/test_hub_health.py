"""HubHealth, the state behind /healthz: one log line per change of state,
and `since` kept while a schema stays down. No database (the errors are the
ones psycopg raises, made here)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from provider.metrics.health import HubHealth, reason_of

REFUSED = psycopg.OperationalError(
    'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
    "\tIs the server running on that host and accepting TCP/IP connections?"
)
MISSING = psycopg.errors.UndefinedTable('relation "orders.taskhub_queue_health" does not exist')


def changes(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "provider.metrics"]


def test_the_reason_is_the_class_and_the_first_line() -> None:
    assert reason_of(REFUSED) == (
        'OperationalError: connection failed: connection to server at "127.0.0.1", port 1'
        " failed: Connection refused"
    )
    assert reason_of(psycopg.OperationalError("")) == "OperationalError"


def test_each_change_is_logged_once_and_since_is_kept_while_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    health = HubHealth(["orders"])
    assert not health.healthy()  # never read: not known to work
    with caplog.at_level(logging.DEBUG, logger="provider.metrics"):
        health.record("orders", None)  # the first read that works: no news
        went_down = health.record("orders", REFUSED)
        for _ in range(5):
            assert health.record("orders", REFUSED) == went_down
        other = health.record("orders", MISSING)  # down still, for another reason
        back = health.record("orders", None)
        health.record("orders", None)
    assert other.since == went_down.since and other.reason == reason_of(MISSING)
    assert back.up and back.since >= went_down.since and health.healthy()
    assert [level for level, _ in changes(caplog)] == ["WARNING", "WARNING", "INFO"]
    first, second, third = (message for _, message in changes(caplog))
    assert first == f"schema orders cannot be read: {reason_of(REFUSED)}"
    assert second == f"schema orders cannot be read: {reason_of(MISSING)}"
    assert third.startswith("schema orders is read again after ")


def test_one_schema_down_is_unhealthy() -> None:
    health = HubHealth(["orders", "billing"])
    health.record("orders", None)
    health.record("billing", MISSING)
    assert not health.healthy()
    assert [(s.schema, s.up) for s in health.states()] == [("orders", True), ("billing", False)]
    assert health.states()[1].reason == reason_of(MISSING)
    # /healthz says up or down and since when; the reason is for the log only.
    assert set(health.states()[1].as_json()) == {"schema", "up", "since"}
