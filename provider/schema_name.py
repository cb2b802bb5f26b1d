"""Validation of task-hub schema names.

A schema name ends up inside SQL text (the migrations substitute it into the
SQL files), so only plain lower-case identifiers are accepted. They are always
quoted when used, so reserved words such as `user` are fine too.
"""

from __future__ import annotations

import re

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class InvalidSchemaName(ValueError):
    """The schema name is not a plain lower-case SQL identifier."""


def validate_schema_name(name: str) -> str:
    """Return `name` if it is a valid schema name, else raise InvalidSchemaName."""
    if not isinstance(name, str) or not _SCHEMA_NAME.fullmatch(name):
        raise InvalidSchemaName(
            f"invalid schema name {name!r}: use 1-63 characters from a-z, 0-9 and _, "
            "not starting with a digit"
        )
    if name.startswith("pg_"):
        raise InvalidSchemaName(f"invalid schema name {name!r}: the pg_ prefix is reserved")
    return name


def quote_schema(name: str) -> str:
    """The schema as a quoted SQL identifier."""
    return f'"{validate_schema_name(name)}"'
