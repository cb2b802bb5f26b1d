"""Apply SQL files from `sql/` inside an Alembic revision."""

from __future__ import annotations

import re

from alembic import context, op
from sqlalchemy import text

from provider.sql_files import render_sql

# SQLAlchemy's text() treats ":name" as a bind parameter, even inside a $$ body
# (and offline it would silently render it as NULL). Escape every such colon.
_BIND_LIKE = re.compile(r"(?<![:\w\\]):(\w+)(?![:\w])")


def apply_sql_files(relative_paths: list[str]) -> None:
    """Execute each file, in order, against the schema this run targets."""
    schema = str(context.config.attributes["schema"])
    for relative_path in relative_paths:
        sql = render_sql(relative_path, schema)
        op.execute(text(_BIND_LIKE.sub(r"\\:\1", sql)))
