"""Least privilege: the procedures run as their owner (SECURITY DEFINER, with
the search_path they already pin), nothing is executable by PUBLIC, and
runtime roles get exactly what they need (`-x runtime_role=R`).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_runtime_privileges", "taskhub_runtime_roles"]


# cleanup_schema now also takes back the runtime roles' privileges. The one it
# replaces is always 0002's (which set aside duroxide's in an adopted schema),
# so the downgrade re-creates that from its released file.
FUNCTIONS = ["cleanup_schema"]


def upgrade() -> None:
    drop_functions(FUNCTIONS)
    apply_sql_files(
        [
            "0005_least_privilege/security_definer.sql",
            "functions/cleanup_schema/0005.sql",
            # Last: it ends by taking PUBLIC's EXECUTE off every function.
            "0005_least_privilege/runtime_roles.sql",
        ]
    )


def downgrade() -> None:
    apply_sql_files(["0005_least_privilege/down.sql"])
    drop_functions(FUNCTIONS)
    apply_sql_files(["functions/cleanup_schema/0002.sql"])
