"""JsonLogFormatter prints every `extra` field, not only the provider's own,
and a value JSON cannot hold never breaks the line. No database."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from provider.logs import JsonLogFormatter


@pytest.fixture
def json_log() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    """A logger whose records go through JsonLogFormatter into a buffer."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonLogFormatter())
    logger = logging.getLogger("tests.json_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, out
    logger.removeHandler(handler)


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_every_extra_field_is_printed(json_log: tuple[logging.Logger, io.StringIO]) -> None:
    logger, out = json_log
    logger.warning("worker %s started", "w-1", extra={"pid": 4242, "region": "eu", "event": "x"})
    (payload,) = lines(out)
    assert payload["message"] == "worker w-1 started"
    assert (payload["pid"], payload["region"], payload["event"]) == (4242, "eu", "x")
    # ... and none of the attributes every record has
    standard = {"args", "msg", "lineno", "pathname", "levelno", "thread", "process", "created"}
    assert not standard & payload.keys()
    assert set(payload) == {"time", "level", "logger", "message", "pid", "region", "event"}


def test_values_json_cannot_hold_are_printed_as_text(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_log
    cycle: list[object] = []
    cycle.append(cycle)
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    logger.info(
        "odd values",
        extra={
            "when": when,
            "where": Path("/srv/app"),
            "tags": {"gpu"},
            "by_pair": {("a", 1): "tuple keys"},
            "cycle": cycle,
        },
    )
    (payload,) = lines(out)  # one line of valid JSON all the same
    assert payload["when"] == str(when)
    assert payload["where"] == "/srv/app"
    assert payload["tags"] == "{'gpu'}"
    assert payload["by_pair"] == "{('a', 1): 'tuple keys'}"
    assert payload["cycle"] == "[[...]]"


def test_an_extra_never_hides_the_records_own_fields(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_log
    logger.error("boom", extra={"level": "fine", "logger": "someone", "time": 0})
    (payload,) = lines(out)
    assert (payload["level"], payload["logger"]) == ("ERROR", "tests.json_logs")
    assert payload["time"] != 0


def test_the_stack_and_exception_are_printed(
    json_log: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = json_log
    try:
        raise ValueError("bad input")
    except ValueError:
        logger.exception("failed", extra={"pid": 7}, stack_info=True)
    (payload,) = lines(out)
    assert "ValueError: bad input" in payload["exception"]
    assert "Stack (most recent call last)" in payload["stack"]
    assert payload["pid"] == 7
