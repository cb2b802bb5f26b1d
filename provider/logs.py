"""Structured logging with the standard `logging` module.

Every record the provider writes carries an `event` name that does not
change between releases (`worker.poison`, `procedure.failed`, ...) and the
ids it is about as record attributes: the instance id and lock token above
all, so that all records of one item can be found together. A poison
decision and the failed ack that follows it, the pair that can hide an
endless loop, share both.

Plain handlers print only the message; `JsonLogFormatter` prints one JSON
object per record with every field:

    handler = logging.StreamHandler()
    handler.setFormatter(JsonLogFormatter())
    logging.getLogger("provider").addHandler(handler)
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

# What every LogRecord has (and what Formatter.format adds): anything else on
# a record came from `extra=`, and is printed.
STANDARD_ATTRIBUTES = frozenset(
    logging.LogRecord("", logging.INFO, "", 0, "", (), None).__dict__
) | {"message", "asctime"}


def fields(event: str, **values: object) -> dict[str, object]:
    """The `extra=` of a record: the event name and the ids that are known."""
    return {"event": event, **{name: value for name, value in values.items() if value is not None}}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and every
    `extra` field (the provider's and the application's alike); a value JSON
    cannot hold is printed as its str()."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in extra_fields(record).items():
            payload.setdefault(name, value)  # an extra never hides the four above
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            payload["stack"] = self.formatStack(record.stack_info)
        return to_json(payload)


def extra_fields(record: logging.LogRecord) -> dict[str, object]:
    """The attributes `extra=` put on the record."""
    return {
        name: value for name, value in record.__dict__.items() if name not in STANDARD_ATTRIBUTES
    }


def to_json(payload: dict[str, object]) -> str:
    """One line of JSON. A formatter must not raise, and default=str does not
    cover everything (a dict with tuple keys, a cycle): such a value becomes
    its repr()."""
    try:
        return json.dumps(payload, default=str)
    except (TypeError, ValueError):
        return json.dumps({name: _json_safe(value) for name, value in payload.items()}, default=str)


def _json_safe(value: object) -> object:
    try:
        json.dumps(value, default=str)
    except (TypeError, ValueError):
        return repr(value)
    return value
