"""Task-hub tables and the lease-safe queue core.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

The tables of the duroxide 0.2.2 contract, and the procedures of both queues:
enqueue, fetch, ack, abandon and renew for orchestrations and worker items,
plus history reads and append. A schema that duroxide created is adopted: its
tables and rows are kept, its procedures of these names are set aside and
come back on downgrade.
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files
from provider.deploy.sql_files import shipped_file

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
# An adopted duroxide schema's tables get our indexes (CREATE INDEX IF NOT
# EXISTS locks the table even when the index exists); the downgrade drops it all.
LOCKS_ON_UPGRADE: list[str] = [
    "instance_locks",
    "instances",
    "kv_store",
    "orchestrator_queue",
    "sessions",
    "worker_queue",
]
LOCKS_ON_DOWNGRADE: list[str] = [
    "instance_locks",
    "instances",
    "kv_store",
    "orchestrator_queue",
    "sessions",
    "worker_queue",
    "_duroxide_migrations",
    "dead_letters",
    "executions",
    "history",
    "kv_delta",
    "taskhub_adopted",
    "taskhub_set_aside_functions",
    "taskhub_settings",
]

DIRECTORY = "0001_queue_core"
UPGRADE_FILES = [
    "adoption.sql",
    "tables.sql",
    "set_aside.sql",
    "helpers.sql",
    "kv_mutations.sql",
    "leases.sql",
    "enqueue_orchestrator_work.sql",
    "fetch_orchestration_item.sql",
    "ack_orchestration_item.sql",
    "abandon_orchestration_item.sql",
    "renew_orchestration_item_lock.sql",
    "enqueue_worker_work.sql",
    "fetch_work_item.sql",
    "ack_worker.sql",
    "abandon_work_item.sql",
    "renew_work_item_lock.sql",
    "history.sql",
]


def upgrade() -> None:
    apply_sql_files([shipped_file(DIRECTORY, name) for name in UPGRADE_FILES])


def downgrade() -> None:
    apply_sql_files([f"{DIRECTORY}/down.sql"])
