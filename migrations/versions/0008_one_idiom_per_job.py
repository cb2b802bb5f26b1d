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

# This revision's files, copied from sql/head/, applied in order.
FILES: list[str] = [
    # The new helpers first: the replaced functions call them.
    "0008_one_idiom_per_job/taskhub_lease_lost_detail.sql",
    "0008_one_idiom_per_job/taskhub_version_in_range.sql",
    "0008_one_idiom_per_job/abandon_orchestration_item.sql",
    "0008_one_idiom_per_job/abandon_work_item.sql",
    "0008_one_idiom_per_job/ack_orchestration_item.sql",
    "0008_one_idiom_per_job/ack_worker.sql",
    "0008_one_idiom_per_job/append_history.sql",
    "0008_one_idiom_per_job/cleanup_schema.sql",
    "0008_one_idiom_per_job/fetch_orchestration_item.sql",
    "0008_one_idiom_per_job/prune_executions.sql",
    "0008_one_idiom_per_job/renew_orchestration_item_lock.sql",
    "0008_one_idiom_per_job/renew_session_lock.sql",
    "0008_one_idiom_per_job/renew_work_item_lock.sql",
    "0008_one_idiom_per_job/taskhub_apply_kv_mutations.sql",
    "0008_one_idiom_per_job/taskhub_lock_orchestration_lease.sql",
    "0008_one_idiom_per_job/taskhub_lock_worker_lease.sql",
    "0008_one_idiom_per_job/taskhub_renew_orchestration_lease.sql",
    "0008_one_idiom_per_job/taskhub_renew_session_lease.sql",
    "0008_one_idiom_per_job/taskhub_renew_work_item_lease.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0001_queue_core/abandon_orchestration_item.sql": ["abandon_orchestration_item"],
    "0001_queue_core/abandon_work_item.sql": ["abandon_work_item"],
    "0007_fault_tolerance/ack_orchestration_item.sql": ["ack_orchestration_item"],
    "0006_hot_path/ack_worker.sql": ["ack_worker"],
    "0007_fault_tolerance/append_history.sql": ["append_history"],
    "0007_fault_tolerance/cleanup_schema.sql": ["cleanup_schema"],
    "0007_fault_tolerance/fetch_orchestration_item.sql": ["fetch_orchestration_item"],
    "0002_full_contract/prune_executions.sql": ["prune_executions"],
    "0001_queue_core/renew_orchestration_item_lock.sql": [
        "renew_orchestration_item_lock",
        "taskhub_renew_orchestration_lease",
    ],
    "0002_full_contract/sessions.sql": ["renew_session_lock"],
    "0001_queue_core/renew_work_item_lock.sql": [
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
