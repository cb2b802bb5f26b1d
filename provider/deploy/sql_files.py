"""The SQL files under `sql/` that the Alembic revisions apply.

The files name the schema with two tokens: `__SCHEMA__` where an identifier is
expected (replaced by the quoted schema) and `__SCHEMA_NAME__` inside string
literals (replaced by the bare, validated name).
"""

from __future__ import annotations

from provider.deploy.resources import sql_dir
from provider.schema_name import quote_schema, validate_schema_name


def render_sql(relative_path: str, schema: str) -> str:
    """The text of one SQL file with the schema substituted."""
    text = (sql_dir() / relative_path).read_text(encoding="utf-8")
    return text.replace("__SCHEMA_NAME__", validate_schema_name(schema)).replace(
        "__SCHEMA__", quote_schema(schema)
    )
