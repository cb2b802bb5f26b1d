"""The SQL files under `sql/` that the Alembic revisions apply.

The files name the schema with two tokens: `__SCHEMA__` where an identifier is
expected (replaced by the quoted schema) and `__SCHEMA_NAME__` inside string
literals (replaced by the bare, validated name). A fetch's turn type is
`__TURN_JSON__`: json (a new hub), or jsonb (a hub whose runtimes have the
older result type prepared; see provider/deploy/turn_form.py).
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


# The two forms of a fetch's turn (history, messages, KV snapshot).
TURN_FORMS = ("json", "jsonb")


def render_text(text: str, schema: str, turn_form: str = "json") -> str:
    """SQL text with the schema substituted for its two tokens, and the turn's form."""
    if turn_form not in TURN_FORMS:
        raise ValueError(f"turn_form must be one of {TURN_FORMS}, not {turn_form!r}")
    return (
        text.replace("__SCHEMA_NAME__", validate_schema_name(schema))
        .replace("__SCHEMA__", quote_schema(schema))
        .replace("__TURN_JSON__", turn_form)
    )


def render_sql(relative_path: str, schema: str, turn_form: str = "json") -> str:
    """The text of one SQL file with the schema substituted."""
    text = (sql_dir() / relative_path).read_text(encoding="utf-8")
    return render_text(text, schema, turn_form)
