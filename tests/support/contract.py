"""The interface duroxide 0.2.2 expects (../shared/contract.md), written out
here, not read from our migrations, so the tests hold the migrations to it."""

from __future__ import annotations

CONTRACT_FUNCTIONS = [
    "fetch_orchestration_item",
    "ack_orchestration_item",
    "abandon_orchestration_item",
    "renew_orchestration_item_lock",
    "enqueue_orchestrator_work",
    "enqueue_worker_work",
    "fetch_work_item",
    "ack_worker",
    "abandon_work_item",
    "renew_work_item_lock",
    "renew_session_lock",
    "cleanup_orphaned_sessions",
    "fetch_history",
    "fetch_history_with_execution",
    "append_history",
    "list_instances",
    "list_executions",
    "latest_execution_id",
    "list_instances_by_status",
    "get_instance_info",
    "get_execution_info",
    "get_system_metrics",
    "get_queue_depths",
    "list_children",
    "get_parent_id",
    "delete_instances_atomic",
    "prune_executions",
    "get_custom_status",
    "get_kv_value",
    "get_kv_all_values",
    "get_instance_stats",
    "cleanup_schema",
]
CONTRACT_TABLES = [
    "instances",
    "executions",
    "history",
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "sessions",
    "kv_store",
    "kv_delta",
    "_duroxide_migrations",
]

# The tables the procedures write (all but the migration ledger).
DATA_TABLES = [table for table in CONTRACT_TABLES if table != "_duroxide_migrations"]


# The turn's three columns of fetch_orchestration_item, which a hub created at
# revision 0017 or later hands over as json (0.2.2 and older hubs: jsonb).
TURN_COLUMNS = ("out_history", "out_messages", "out_kv_snapshot")


def turn_as_json(result_type: str) -> str:
    """fetch_orchestration_item's result type with the turn as json."""
    for column in TURN_COLUMNS:
        result_type = result_type.replace(f"{column} jsonb", f"{column} json")
    return result_type
