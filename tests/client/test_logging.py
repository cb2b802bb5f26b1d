"""The provider's logs tell the story: every record has a stable event name
and the ids it is about, so that the records of one item read together."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import activity_execute, start_orchestration
from provider import PermanentError, TaskHub
from provider.logs import JsonLogFormatter, fields
from provider.worker.lease_keeper import LeaseKeeper


def records_of(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if getattr(record, "event", None) == event]


def handed_out_twice(
    fetch: Callable[[int], Any], abandon: Callable[[str], object], caplog: pytest.LogCaptureFixture
) -> Any:
    """Fetch, abandon, and fetch again (logging captured): the second lease."""
    first = fetch(30_000)
    assert first is not None
    abandon(first.lock_token)
    with caplog.at_level(logging.INFO, logger="provider"):
        second = fetch(30_000)
    assert second is not None
    return second


def test_an_orchestration_item_handed_out_again_is_logged_with_its_ids(
    hub: TaskHub, caplog: pytest.LogCaptureFixture
) -> None:
    hub.enqueue_orchestrator_work("again-1", start_orchestration("again-1"))
    second = handed_out_twice(hub.fetch_orchestration_item, hub.abandon_orchestration_item, caplog)
    (record,) = records_of(caplog, "orchestration.redelivered")
    expected = {
        "instance_id": "again-1",
        "lock_token": second.lock_token,
        "attempt_count": 2,
        "schema": hub.config.schema,
    }
    assert {name: getattr(record, name, None) for name in expected} == expected


def test_a_worker_item_handed_out_again_is_logged_with_its_ids(
    hub: TaskHub, caplog: pytest.LogCaptureFixture
) -> None:
    hub.enqueue_worker_work(activity_execute("again-2", 7, name="Charge"))
    second = handed_out_twice(hub.fetch_work_item, hub.abandon_work_item, caplog)
    (record,) = records_of(caplog, "work_item.redelivered")
    expected = {
        "instance_id": "again-2",
        "activity_id": 7,
        "activity": "Charge",
        "lock_token": second.lock_token,
        "attempt_count": 2,
    }
    assert {name: getattr(record, name, None) for name in expected} == expected


def test_a_refused_call_is_logged_with_its_sqlstate(
    hub: TaskHub, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="provider"), pytest.raises(PermanentError):
        hub.enqueue_orchestrator_work("x" * 2000, start_orchestration("x" * 2000))
    (record,) = records_of(caplog, "procedure.failed")
    assert record.levelno == logging.INFO
    expected = {
        "operation": "enqueue_orchestrator_work",
        "sqlstate": "54000",
        "error_class": "PermanentError",
    }
    assert {name: getattr(record, name, None) for name in expected} == expected


def test_a_lost_lease_is_logged_with_the_ids_of_the_work_it_protected(
    hub: TaskHub, sql: psycopg.Connection[Any], caplog: pytest.LogCaptureFixture
) -> None:
    hub.enqueue_worker_work(activity_execute("lost-1", 3))
    lease = hub.fetch_work_item(30_000)
    assert lease is not None
    keeper = LeaseKeeper(
        lambda extend_ms, timeout_s: hub.renew_work_item_lock(
            lease.lock_token, extend_ms, timeout_s=timeout_s
        ),
        300,
        name="lost-1:Activity#3",
        log_ids={"instance_id": "lost-1", "lock_token": lease.lock_token},
    )
    # The item is cancelled under the running work: the next renewal is refused.
    sql.execute(f'DELETE FROM "{hub.config.schema}".worker_queue')
    with caplog.at_level(logging.INFO, logger="provider"), keeper:
        assert keeper.token.wait(5.0)
    # The procedure refused with TH001, which the provider raises as LockLost.
    assert isinstance(keeper.lost_reason, str) and "lease lost" in keeper.lost_reason
    (record,) = records_of(caplog, "lease.lost")
    ids = (getattr(record, "instance_id", None), getattr(record, "lock_token", None))
    assert ids == ("lost-1", lease.lock_token)


def test_the_json_formatter_prints_one_object_with_every_field() -> None:
    logger = logging.getLogger("provider.test_json")
    record = logger.makeRecord(
        logger.name,
        logging.ERROR,
        __file__,
        1,
        "poison: %s",
        ("Charge",),
        sys.exc_info(),
        extra=fields("worker.poison", instance_id="i-1", lock_token="t-1", attempt_count=11),
    )
    line = JsonLogFormatter().format(record)
    payload = json.loads(line)
    assert "\n" not in line
    assert payload["message"] == "poison: Charge" and payload["level"] == "ERROR"
    assert {
        key: payload[key] for key in ("event", "instance_id", "lock_token", "attempt_count")
    } == {
        "event": "worker.poison",
        "instance_id": "i-1",
        "lock_token": "t-1",
        "attempt_count": 11,
    }
