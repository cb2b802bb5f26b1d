"""Push wakeups: the procedures that make work visible now announce it on the
schema's channel while a worker waits for it (taskhub_wake), so that workers
LISTEN instead of polling fast; workers register in taskhub_wakeup_listeners
(taskhub_listen) and say when they wait (taskhub_set_waiting).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_wakeup_listeners"]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0009.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0009_push_wakeups/).
FILES: list[str] = [
    # The table and the helpers first: the SQL functions and procedures use them.
    "0009_push_wakeups/wakeup_listeners.sql",
    "functions/taskhub_wakeup_channel/0009.sql",
    "functions/taskhub_wake/0009.sql",
    "functions/taskhub_listen/0009.sql",
    "functions/taskhub_set_waiting/0009.sql",
    "functions/ack_orchestration_item/0009.sql",
    "functions/ack_worker/0009.sql",
    "functions/cleanup_schema/0009.sql",
    "functions/enqueue_orchestrator_work/0009.sql",
    "functions/enqueue_worker_work/0009.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0008.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0008.sql": ["ack_worker"],
    "functions/cleanup_schema/0008.sql": ["cleanup_schema"],
    "functions/enqueue_orchestrator_work/0001.sql": ["enqueue_orchestrator_work"],
    "functions/enqueue_worker_work/0001.sql": ["enqueue_worker_work"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_listen",
    "taskhub_set_waiting",
    "taskhub_wake",
    "taskhub_wakeup_channel",
]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0009_push_wakeups/down.sql"])
