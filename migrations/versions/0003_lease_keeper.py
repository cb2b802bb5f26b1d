"""Millisecond renewal of a single session lease, for the provider's lease keeper.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_and_restore_functions,
    set_aside_functions,
)

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

FUNCTIONS = ["taskhub_renew_session_lease"]


def upgrade() -> None:
    set_aside_functions(FUNCTIONS)
    apply_sql_files(["0003_lease_keeper/renew_session_lease.sql"])


def downgrade() -> None:
    drop_and_restore_functions(FUNCTIONS)
