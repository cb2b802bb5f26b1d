"""The checks the procedures would make of a caller's arguments, made in
Python before any SQL: a refusal inside SQL aborts the transaction it runs
in, and with `conn=` (the outbox) that is the caller's own, with their writes.

The limits are the procedures' own (sql/head/helpers/taskhub_max_id_bytes.sql,
taskhub_max_payload_bytes.sql); a change there must be made here too.
"""

from __future__ import annotations

from typing import Any

from provider.errors import InvalidInput

MAX_ID_BYTES = 1024
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024
# A character takes at most 4 bytes in UTF-8: shorter texts need no encoding.
_MAX_BYTES_PER_CHARACTER = 4


def utf8_size(operation: str, what: str, text: str) -> int:
    """How many bytes `text` stores; a text UTF-8 cannot hold (a lone
    surrogate) is refused."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise InvalidInput(operation, f"{what} is not valid Unicode text: {error.reason}") from None


def check_text(operation: str, what: str, value: Any) -> None:
    """A non-empty text PostgreSQL can store (no NUL character, valid UTF-8)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(operation, f"{what} must be a non-empty text, got {value!r}"[:200])
    if "\x00" in value:
        raise InvalidInput(operation, f"{what} must not contain a NUL character")
    utf8_size(operation, what, value)


def check_instance_id(operation: str, instance_id: Any) -> None:
    check_text(operation, "instance_id", instance_id)
    if utf8_size(operation, "instance_id", instance_id) > MAX_ID_BYTES:
        raise InvalidInput(operation, f"instance_id is longer than {MAX_ID_BYTES} bytes")


def check_version(operation: str, version: Any) -> None:
    """None (the newest registered version) or a non-empty text."""
    if version is not None:
        check_text(operation, "version", version)


def check_work_item_size(operation: str, what: str, work_item: str) -> None:
    """A work item no larger than the procedures store; `what` made it large."""
    if len(work_item) * _MAX_BYTES_PER_CHARACTER <= MAX_PAYLOAD_BYTES:
        return
    if utf8_size(operation, "the work item", work_item) > MAX_PAYLOAD_BYTES:
        raise InvalidInput(
            operation, f"{what} makes a work item larger than {MAX_PAYLOAD_BYTES} bytes"
        )
