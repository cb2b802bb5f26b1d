"""Leaner acks and worker fetch: fewer statements and expressions per call,
same signatures (no runtime notices the change).

ack_orchestration_item checks each element of its arrays in the statement
that writes it (no pass of its own over the arrays) and locks its lease
inline (no nested function and function scan); the argument checks are one
test. ack_worker tests a short, well-formed completion once (validated as
json, never built into jsonb), and learns whether a listener waits from its
DELETE's RETURNING instead of a statement of its own. fetch_work_item checks
its arguments in one test and writes the lease with UPDATE ... INTO.

orchestrator_queue loses its index on lock_token: every lookup of a lease's
messages goes by instance, and the fetch's lease tag becomes a HOT update
(no index entry written per message and turn).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = ["orchestrator_queue"]
LOCKS_ON_DOWNGRADE: list[str] = ["orchestrator_queue"]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0018.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0018_lean_acks/).
FILES: list[str] = [
    "functions/taskhub_refuse_turn_element/0018.sql",
    "functions/ack_orchestration_item/0018.sql",
    "functions/ack_worker/0018.sql",
    "functions/fetch_work_item/0018.sql",
    "functions/taskhub_give_back_failed_turn/0018.sql",
    "0018_lean_acks/taskhub_current_leases.sql",
    # Last: every lookup by token alone is gone.
    "0018_lean_acks/drop_orch_lock_idx.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0015.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0016.sql": ["ack_worker"],
    "functions/fetch_work_item/0015.sql": ["fetch_work_item"],
    "functions/ack_orchestration_item/0007.sql": ["taskhub_give_back_failed_turn"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_refuse_turn_element"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    # The index first: the released functions find messages by token alone.
    apply_sql_files(
        [
            "0018_lean_acks/orch_lock_idx.sql",
            "0018_lean_acks/taskhub_current_leases_by_token.sql",
        ]
    )
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
