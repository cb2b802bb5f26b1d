"""Batched retention: taskhub_prune_ended deletes one bounded batch of ended
root instances, oldest first, each with its whole tree and everything it
owns (as delete_instances_atomic deletes it), in one transaction that waits
for no other session: rows, leases and fetches held elsewhere are skipped,
left whole for a later batch. taskhub-pg prune and the dashboard's prune
call it batch after batch; an operator role is granted it, the runtime
needs it not. Candidates walk taskhub_instances_created_idx, which 0001
made: no index is added, no table of the runtime's is altered, so the
upgrade and the downgrade lock nothing.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0020.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0020_batched_retention/).
FILES: list[str] = [
    "functions/taskhub_prune_ended/0020.sql",
    # Its privilege row: every operator role is granted it by the migration run.
    "0020_batched_retention/operator_privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_prune_ended"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0020_batched_retention/down.sql"])
