"""The procedures that make work visible ask whether a listener waits in the
statement that makes the work visible (INSERT ... RETURNING EXISTS (...)),
and call taskhub_wake only when one does. Before, every enqueue and ack with
a completion called taskhub_wake, whose own check was two statements more:
5-6 us a call, a third of an enqueue's server time on a hub where nobody
waits; the check in the statement is an index probe of 1.5-3 us.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0011.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/ack_orchestration_item/0011.sql",
    "functions/ack_worker/0011.sql",
    "functions/enqueue_orchestrator_work/0011.sql",
    "functions/enqueue_worker_work/0011.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0010.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0010.sql": ["ack_worker"],
    "functions/enqueue_orchestrator_work/0009.sql": ["enqueue_orchestrator_work"],
    "functions/enqueue_worker_work/0009.sql": ["enqueue_worker_work"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = []


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
