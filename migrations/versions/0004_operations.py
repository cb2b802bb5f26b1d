"""Operations: views for psql (queue health, leases, poison candidates,
sessions, stuck instances) and operator actions (requeue a dead letter,
force-release a lease).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_and_restore_functions,
    set_aside_functions,
)

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

FUNCTIONS = ["taskhub_requeue_dead_letter", "taskhub_release_orchestration_lease"]


def upgrade() -> None:
    set_aside_functions(FUNCTIONS)
    apply_sql_files(["0004_operations/views.sql", "0004_operations/actions.sql"])


def downgrade() -> None:
    drop_and_restore_functions(FUNCTIONS)
    apply_sql_files(["0004_operations/down.sql"])
