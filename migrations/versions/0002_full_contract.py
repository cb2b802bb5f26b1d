"""The rest of the duroxide contract: sessions, management, deletion, pruning,
custom status, KV reads, instance stats and schema cleanup.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

In an adopted schema, duroxide's functions of these names are set aside and
come back on downgrade.
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_and_restore_functions,
    set_aside_functions,
)
from provider.deploy.sql_files import shipped_file

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

DIRECTORY = "0002_full_contract"
FILES = [
    "sessions.sql",
    "listing.sql",
    "delete_instances_atomic.sql",
    "prune_executions.sql",
    "kv_and_status.sql",
    "cleanup_schema.sql",
    "bulk_candidates.sql",
]
FUNCTIONS = [
    "renew_session_lock",
    "cleanup_orphaned_sessions",
    "list_instances",
    "list_instances_by_status",
    "list_executions",
    "latest_execution_id",
    "get_instance_info",
    "get_execution_info",
    "get_system_metrics",
    "get_queue_depths",
    "list_children",
    "get_parent_id",
    "delete_instances_atomic",
    "prune_executions",
    "get_custom_status",
    "get_kv_value",
    "get_kv_all_values",
    "get_instance_stats",
    "cleanup_schema",
    "taskhub_bulk_delete_candidates",
    "taskhub_bulk_prune_candidates",
]


def upgrade() -> None:
    set_aside_functions(FUNCTIONS)
    apply_sql_files([shipped_file(DIRECTORY, name) for name in FILES])


def downgrade() -> None:
    drop_and_restore_functions(FUNCTIONS)
