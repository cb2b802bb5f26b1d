"""The hot path: the lease is the last thing a fetch computes, plans are
generic, no SQL-language helper or per-call setting read on the fetch and ack
paths, and the payload columns are stored in the row (lz4 where available).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
# SET STORAGE and SET COMPRESSION both ways: metadata only, but ACCESS EXCLUSIVE.
LOCKS_ON_UPGRADE: list[str] = ["history", "orchestrator_queue", "worker_queue"]
LOCKS_ON_DOWNGRADE: list[str] = ["history", "orchestrator_queue", "worker_queue"]

# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back the definitions of these released files.
REPLACED = [
    "0001_queue_core/helpers.sql",  # taskhub_dead_letter_cap; the others come back unchanged
    "functions/fetch_orchestration_item/0001.sql",
    "functions/fetch_work_item/0001.sql",
    "functions/ack_orchestration_item/0001.sql",
    "functions/ack_worker/0001.sql",
]
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS = ["taskhub_bury_orchestrator_messages", "taskhub_bury_work_item"]


def upgrade() -> None:
    apply_sql_files(
        [
            "0006_hot_path/storage.sql",
            "0006_hot_path/dead_letter_cap.sql",
            "functions/fetch_orchestration_item/0006.sql",
            "functions/fetch_work_item/0006.sql",
            "functions/ack_orchestration_item/0006.sql",
            "functions/ack_worker/0006.sql",
            "0006_hot_path/no_public_execute.sql",
        ]
    )


def downgrade() -> None:
    replace_with_released(REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0006_hot_path/down.sql"])
