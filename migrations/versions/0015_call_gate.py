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

# This revision's files, copied from sql/head/, applied in order.
FILES: list[str] = [
    "0015_call_gate/abandon_orchestration_item.sql",
    "0015_call_gate/abandon_work_item.sql",
    "0015_call_gate/ack_orchestration_item.sql",
    "0015_call_gate/ack_worker.sql",
    "0015_call_gate/append_history.sql",
    "0015_call_gate/cleanup_orphaned_sessions.sql",
    "0015_call_gate/cleanup_schema.sql",
    "0015_call_gate/delete_instances_atomic.sql",
    "0015_call_gate/enqueue_orchestrator_work.sql",
    "0015_call_gate/enqueue_worker_work.sql",
    "0015_call_gate/fetch_history.sql",
    "0015_call_gate/fetch_history_with_execution.sql",
    "0015_call_gate/fetch_orchestration_item.sql",
    "0015_call_gate/fetch_work_item.sql",
    "0015_call_gate/get_custom_status.sql",
    "0015_call_gate/get_execution_info.sql",
    "0015_call_gate/get_instance_info.sql",
    "0015_call_gate/get_instance_stats.sql",
    "0015_call_gate/get_kv_all_values.sql",
    "0015_call_gate/get_kv_value.sql",
    "0015_call_gate/get_parent_id.sql",
    "0015_call_gate/get_queue_depths.sql",
    "0015_call_gate/get_system_metrics.sql",
    "0015_call_gate/latest_execution_id.sql",
    "0015_call_gate/list_children.sql",
    "0015_call_gate/list_executions.sql",
    "0015_call_gate/list_instances.sql",
    "0015_call_gate/list_instances_by_status.sql",
    "0015_call_gate/prune_executions.sql",
    "0015_call_gate/renew_orchestration_item_lock.sql",
    "0015_call_gate/renew_session_lock.sql",
    "0015_call_gate/renew_work_item_lock.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0013_citus_ready_statements/abandon_orchestration_item.sql": ["abandon_orchestration_item"],
    "0008_one_idiom_per_job/abandon_work_item.sql": ["abandon_work_item"],
    "0013_citus_ready_statements/ack_orchestration_item.sql": ["ack_orchestration_item"],
    "0013_citus_ready_statements/ack_worker.sql": ["ack_worker"],
    "0008_one_idiom_per_job/append_history.sql": ["append_history"],
    "0002_full_contract/sessions.sql": ["cleanup_orphaned_sessions"],
    "0012_deploy_gate/cleanup_schema.sql": ["cleanup_schema"],
    "0002_full_contract/delete_instances_atomic.sql": ["delete_instances_atomic"],
    "0013_citus_ready_statements/enqueue_orchestrator_work.sql": ["enqueue_orchestrator_work"],
    "0013_citus_ready_statements/enqueue_worker_work.sql": ["enqueue_worker_work"],
    "0001_queue_core/history.sql": ["fetch_history", "fetch_history_with_execution"],
    "0013_citus_ready_statements/fetch_orchestration_item.sql": ["fetch_orchestration_item"],
    "0010_no_jit_on_the_hot_path/fetch_work_item.sql": ["fetch_work_item"],
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
    "0008_one_idiom_per_job/prune_executions.sql": ["prune_executions"],
    "0008_one_idiom_per_job/renew_orchestration_item_lock.sql": ["renew_orchestration_item_lock"],
    "0008_one_idiom_per_job/renew_session_lock.sql": ["renew_session_lock"],
    "0008_one_idiom_per_job/renew_work_item_lock.sql": ["renew_work_item_lock"],
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
