"""A deploy gate: every migration run that applies a revision records each
function and view it leaves (taskhub_definitions: a digest of the
definition, SECURITY DEFINER and the SET clauses apart), and
taskhub_check_drift() names what differs from that record, plus missing
runtime-role grants, EXECUTE left to PUBLIC, versions missing from
_duroxide_migrations and settings out of range. `taskhub-pg check` runs it
and exits non-zero; `taskhub-pg repair` puts things back.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_definitions"]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0012.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0012_deploy_gate/).
FILES: list[str] = [
    # The ledger first, then the functions in the order they use each other
    # (SQL-language bodies are checked when created).
    "0012_deploy_gate/taskhub_definitions.sql",
    "functions/taskhub_live_definitions/0012.sql",
    "functions/taskhub_record_definitions/0012.sql",
    "functions/taskhub_duroxide_versions/0012.sql",
    "functions/taskhub_check_drift/0012.sql",
    "functions/cleanup_schema/0012.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {"functions/cleanup_schema/0009.sql": ["cleanup_schema"]}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_check_drift",
    "taskhub_duroxide_versions",
    "taskhub_live_definitions",
    "taskhub_record_definitions",
]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0012_deploy_gate/down.sql"])
