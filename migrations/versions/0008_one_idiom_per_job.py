"""One idiom per job: argument checks are written inline the same way
everywhere (taskhub_require goes), every 'lease lost' error gives its detail
through taskhub_lease_lost_detail, the version-range test of
fetch_orchestration_item is written once (taskhub_version_in_range), and
cleanup_schema finds the hub's functions in the catalogue instead of a list.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0008.sql, whole or a patch on the version before).
FILES: list[str] = [
    # The new helpers first: the replaced functions call them.
    "functions/taskhub_lease_lost_detail/0008.sql",
    "functions/taskhub_version_in_range/0008.sql",
    "functions/abandon_orchestration_item/0008.sql",
    "functions/abandon_work_item/0008.sql",
    "functions/ack_orchestration_item/0008.sql",
    "functions/ack_worker/0008.sql",
    "functions/append_history/0008.sql",
    "functions/cleanup_schema/0008.sql",
    "functions/fetch_orchestration_item/0008.sql",
    "functions/prune_executions/0008.sql",
    "functions/renew_orchestration_item_lock/0008.sql",
    "functions/renew_session_lock/0008.sql",
    "functions/renew_work_item_lock/0008.sql",
    "functions/taskhub_apply_kv_mutations/0008.sql",
    "functions/taskhub_lock_orchestration_lease/0008.sql",
    "functions/taskhub_lock_worker_lease/0008.sql",
    "functions/taskhub_renew_orchestration_lease/0008.sql",
    "functions/taskhub_renew_session_lease/0008.sql",
    "functions/taskhub_renew_work_item_lease/0008.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/abandon_orchestration_item/0001.sql": ["abandon_orchestration_item"],
    "functions/abandon_work_item/0001.sql": ["abandon_work_item"],
    "functions/ack_orchestration_item/0007.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0006.sql": ["ack_worker"],
    "functions/append_history/0007.sql": ["append_history"],
    "functions/cleanup_schema/0007.sql": ["cleanup_schema"],
    "functions/fetch_orchestration_item/0007.sql": ["fetch_orchestration_item"],
    "functions/prune_executions/0002.sql": ["prune_executions"],
    "functions/renew_orchestration_item_lock/0001.sql": [
        "renew_orchestration_item_lock",
        "taskhub_renew_orchestration_lease",
    ],
    "0002_full_contract/sessions.sql": ["renew_session_lock"],
    "functions/renew_work_item_lock/0001.sql": [
        "renew_work_item_lock",
        "taskhub_renew_work_item_lease",
    ],
    "0001_queue_core/kv_mutations.sql": ["taskhub_apply_kv_mutations"],
    "0001_queue_core/leases.sql": ["taskhub_lock_orchestration_lease", "taskhub_lock_worker_lease"],
    "0003_lease_keeper/renew_session_lease.sql": ["taskhub_renew_session_lease"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_lease_lost_detail", "taskhub_version_in_range"]
# Gone in this revision (nothing calls it any more): the downgrade puts it back.
DROPPED: dict[str, list[str]] = {"0001_queue_core/helpers.sql": ["taskhub_require"]}


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])
    drop_functions([name for names in DROPPED.values() for name in names])


def downgrade() -> None:
    replace_with_released(list(DROPPED), DROPPED)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0006_hot_path/no_public_execute.sql"])
