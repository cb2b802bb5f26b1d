"""Fault tolerance: a transient database failure the runtime records is given
back for redelivery instead of failing the orchestration; no stored row can
make a fetch fail; writes refuse JSON no fetch could hand over; the caller's
clock moves a lease by at most a second.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = ["taskhub_settings"]
LOCKS_ON_DOWNGRADE: list[str] = ["shielded_failures", "taskhub_settings"]

# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED = {
    "0001_queue_core/helpers.sql": ["taskhub_clock_ms", "taskhub_try_jsonb"],
    "0001_queue_core/history.sql": ["append_history"],
    "0005_least_privilege/runtime_roles.sql": [
        "taskhub_grant_runtime_role",
        "taskhub_revoke_runtime_role",
    ],
    "functions/cleanup_schema/0005.sql": ["cleanup_schema"],
    "functions/fetch_orchestration_item/0006.sql": ["fetch_orchestration_item"],
    "functions/ack_orchestration_item/0006.sql": ["ack_orchestration_item"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS = [
    "taskhub_max_json_depth",
    "taskhub_unstorable_json",
    "taskhub_storable_json",
    "taskhub_max_clock_skew_ms",
    "taskhub_transient_conditions",
    "taskhub_transient_condition",
    "taskhub_provider_operations",
    "taskhub_transient_failure_of",
    "taskhub_transient_retry_delay_ms",
    "taskhub_read_turn_row_by_row",
    "taskhub_give_back_failed_turn",
]


def upgrade() -> None:
    apply_sql_files(
        [
            "0007_fault_tolerance/json_limits.sql",
            "0007_fault_tolerance/clock.sql",
            "0007_fault_tolerance/transient_failures.sql",
            "functions/fetch_orchestration_item/0007.sql",
            "functions/ack_orchestration_item/0007.sql",
            "functions/append_history/0007.sql",
            "0007_fault_tolerance/runtime_roles.sql",
            "functions/cleanup_schema/0007.sql",
            # Last: like every function of the schema, the new ones are not
            # executable by PUBLIC.
            "0006_hot_path/no_public_execute.sql",
        ]
    )


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0007_fault_tolerance/down.sql"])
