"""Statements ready for Citus, on plain PostgreSQL too (devkit/schema/sql_rules.py
checks them): the ack consumes the turn's messages and ends the lease in two
statements instead of a data-modifying CTE, and every UPDATE, DELETE and row
lock on an instance-keyed table names the instance where the contract allows
(abandon, renew, release, the fetch's claim, the burial of dead letters,
which now takes the instance: taskhub_bury_orchestrator_messages(text,
bigint[], integer)). Leases named by their token alone say so. The enqueues
and ack_worker ask whether a listener waits in a statement of their own
again: Citus refuses the subquery that 0011 put in their INSERT's RETURNING.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0013.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/abandon_orchestration_item/0013.sql",
    "functions/ack_orchestration_item/0013.sql",
    "functions/ack_worker/0013.sql",
    "functions/enqueue_orchestrator_work/0013.sql",
    "functions/enqueue_worker_work/0013.sql",
    "functions/fetch_orchestration_item/0013.sql",
    "functions/taskhub_bury_orchestrator_messages/0013.sql",
    "functions/taskhub_lock_orchestration_lease/0013.sql",
    "functions/taskhub_release_orchestration_lease/0013.sql",
    "functions/taskhub_renew_orchestration_lease/0013.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/abandon_orchestration_item/0008.sql": ["abandon_orchestration_item"],
    "functions/ack_orchestration_item/0011.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0011.sql": ["ack_worker"],
    "functions/enqueue_orchestrator_work/0011.sql": ["enqueue_orchestrator_work"],
    "functions/enqueue_worker_work/0011.sql": ["enqueue_worker_work"],
    "functions/fetch_orchestration_item/0010.sql": ["fetch_orchestration_item"],
    "functions/fetch_orchestration_item/0007.sql": ["taskhub_bury_orchestrator_messages"],
    "functions/taskhub_lock_orchestration_lease/0008.sql": ["taskhub_lock_orchestration_lease"],
    "0004_operations/actions.sql": ["taskhub_release_orchestration_lease"],
    "functions/taskhub_renew_orchestration_lease/0008.sql": ["taskhub_renew_orchestration_lease"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = []


# Its signature changes (the instance comes first): the old one is dropped.
RESIGNED = ["taskhub_bury_orchestrator_messages"]


def upgrade() -> None:
    drop_functions(RESIGNED)
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    drop_functions(RESIGNED)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
