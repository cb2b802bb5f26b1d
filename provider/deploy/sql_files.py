"""The SQL files under `sql/` that the Alembic revisions apply.

The files name the schema with two tokens: `__SCHEMA__` where an identifier is
expected (replaced by the quoted schema) and `__SCHEMA_NAME__` inside string
literals (replaced by the bare, validated name).
"""

from __future__ import annotations

import re
from pathlib import Path

from provider.deploy.resources import sql_dir
from provider.schema_name import quote_schema, validate_schema_name

# A released revision's folder: sql/NNNN_name/ (sql/head/ is not one).
RELEASED_FOLDER = re.compile(r"^(\d{4})_\w+$")


def released_folders(up_to: str | None = None) -> list[Path]:
    """The released revisions' folders, oldest first; with up_to, only those
    of revisions at or below it ("0012")."""
    found = []
    for folder in sql_dir().iterdir():
        number = RELEASED_FOLDER.match(folder.name)
        if number and folder.is_dir() and (up_to is None or number.group(1) <= up_to):
            found.append(folder)
    return sorted(found, key=lambda folder: folder.name)


def render_text(text: str, schema: str) -> str:
    """SQL text with the schema substituted for its two tokens."""
    return text.replace("__SCHEMA_NAME__", validate_schema_name(schema)).replace(
        "__SCHEMA__", quote_schema(schema)
    )


def render_sql(relative_path: str, schema: str) -> str:
    """The text of one SQL file with the schema substituted."""
    return render_text((sql_dir() / relative_path).read_text(encoding="utf-8"), schema)
