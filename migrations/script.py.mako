<%!
    import json

    def py(value):
        """A literal as ruff would format it: strings in double quotes."""
        return "None" if value is None else json.dumps(value)
%>\
<%
    # `make revision NAME=x` (devkit/schema/revision_maker.py) fills these in
    # from what changed in sql/head/; `alembic revision --rev-id NNNN -m ...`
    # leaves them empty, for a revision written by hand.
    files = context.get("files", [])
    replaced = context.get("replaced", {})
    added = context.get("added", [])
%>\
"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date.date()}
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = ${py(up_revision)}
down_revision = ${py(down_revision)}
branch_labels = ${py(branch_labels)}
depends_on = ${py(depends_on)}

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: the versions of its functions that
# `make revision` wrote from sql/head/ (sql/functions/<name>/${up_revision}.sql),
# then any file of its own you write by hand (sql/${up_revision}_<name>/).
FILES: list[str] = ${py(files)}
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = ${py(replaced)}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ${py(added)}


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
