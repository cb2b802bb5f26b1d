"""The call gate: every function the runtime calls takes a shared advisory
lock first, which a migration run takes exclusively before it changes
anything. A call that finds it held waits, then runs the definition the
migration left (through EXECUTE), so no call is ever half-way through a body
when a migration commits: a downgrade can drop what head's bodies use.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0015.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/abandon_orchestration_item/0015.sql",
    "functions/abandon_work_item/0015.sql",
    "functions/ack_orchestration_item/0015.sql",
    "functions/ack_worker/0015.sql",
    "functions/append_history/0015.sql",
    "functions/cleanup_orphaned_sessions/0015.sql",
    "functions/cleanup_schema/0015.sql",
    "functions/delete_instances_atomic/0015.sql",
    "functions/enqueue_orchestrator_work/0015.sql",
    "functions/enqueue_worker_work/0015.sql",
    "functions/fetch_history/0015.sql",
    "functions/fetch_history_with_execution/0015.sql",
    "functions/fetch_orchestration_item/0015.sql",
    "functions/fetch_work_item/0015.sql",
    "functions/get_custom_status/0015.sql",
    "functions/get_execution_info/0015.sql",
    "functions/get_instance_info/0015.sql",
    "functions/get_instance_stats/0015.sql",
    "functions/get_kv_all_values/0015.sql",
    "functions/get_kv_value/0015.sql",
    "functions/get_parent_id/0015.sql",
    "functions/get_queue_depths/0015.sql",
    "functions/get_system_metrics/0015.sql",
    "functions/latest_execution_id/0015.sql",
    "functions/list_children/0015.sql",
    "functions/list_executions/0015.sql",
    "functions/list_instances/0015.sql",
    "functions/list_instances_by_status/0015.sql",
    "functions/prune_executions/0015.sql",
    "functions/renew_orchestration_item_lock/0015.sql",
    "functions/renew_session_lock/0015.sql",
    "functions/renew_work_item_lock/0015.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/abandon_orchestration_item/0013.sql": ["abandon_orchestration_item"],
    "functions/abandon_work_item/0008.sql": ["abandon_work_item"],
    "functions/ack_orchestration_item/0013.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0013.sql": ["ack_worker"],
    "functions/append_history/0008.sql": ["append_history"],
    "0002_full_contract/sessions.sql": ["cleanup_orphaned_sessions"],
    "functions/cleanup_schema/0012.sql": ["cleanup_schema"],
    "functions/delete_instances_atomic/0002.sql": ["delete_instances_atomic"],
    "functions/enqueue_orchestrator_work/0013.sql": ["enqueue_orchestrator_work"],
    "functions/enqueue_worker_work/0013.sql": ["enqueue_worker_work"],
    "0001_queue_core/history.sql": ["fetch_history", "fetch_history_with_execution"],
    "functions/fetch_orchestration_item/0013.sql": ["fetch_orchestration_item"],
    "functions/fetch_work_item/0010.sql": ["fetch_work_item"],
    "0002_full_contract/kv_and_status.sql": [
        "get_custom_status",
        "get_instance_stats",
        "get_kv_all_values",
        "get_kv_value",
    ],
    "0002_full_contract/listing.sql": [
        "get_execution_info",
        "get_instance_info",
        "get_parent_id",
        "get_queue_depths",
        "get_system_metrics",
        "latest_execution_id",
        "list_children",
        "list_executions",
        "list_instances",
        "list_instances_by_status",
    ],
    "functions/prune_executions/0008.sql": ["prune_executions"],
    "functions/renew_orchestration_item_lock/0008.sql": ["renew_orchestration_item_lock"],
    "functions/renew_session_lock/0008.sql": ["renew_session_lock"],
    "functions/renew_work_item_lock/0008.sql": ["renew_work_item_lock"],
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
