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

# The attributes the provider puts on its records (via `extra=`).
STRUCTURED_FIELDS = (
    "event",
    "schema",
    "operation",
    "instance_id",
    "execution_id",
    "activity_id",
    "activity",
    "lock_token",
    "attempt_count",
    "owner_id",
    "sqlstate",
    "error_class",
    "duration_ms",
    "lease",
    "remaining_ms",
)


def fields(event: str, **values: object) -> dict[str, object]:
    """The `extra=` of a record: the event name and the ids that are known."""
    return {"event": event, **{name: value for name, value in values.items() if value is not None}}


class JsonLogFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message and every field."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in STRUCTURED_FIELDS:
            if hasattr(record, name):
                payload[name] = getattr(record, name)
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)
