"""No JIT on the hot path: the four procedures that plan with enable_seqscan
off (fetch and ack on both queues) also set jit = off. Their plan costs
passed jit_above_cost, so every fetch compiled its candidate scan: 12-19 ms
per fetch on a queue of 200,000 messages, 0.8 ms before revision 0006.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0010.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/ack_orchestration_item/0010.sql",
    "functions/ack_worker/0010.sql",
    "functions/fetch_orchestration_item/0010.sql",
    "functions/fetch_work_item/0010.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0009.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0009.sql": ["ack_worker"],
    "functions/fetch_orchestration_item/0008.sql": ["fetch_orchestration_item"],
    "functions/fetch_work_item/0006.sql": ["fetch_work_item"],
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
