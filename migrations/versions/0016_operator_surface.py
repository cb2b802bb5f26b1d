"""The operator surface: operator roles that can run the whole runbook and
nothing more; instances found by status, name and time (those known only by
their queued messages too), a page at a time; a runtime role's grant or revoke
recorded by the deploy gate, so it is never drift; enqueue_orchestrator_work
and ack_worker refuse a \\u0000 escape and over-deep nesting as bad input
(22023), like every other write. No signature of the runtime changes.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = ["instances"]
LOCKS_ON_DOWNGRADE: list[str] = [
    "instances",
    "taskhub_operator_privileges",
    "taskhub_operator_roles",
]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0016.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0016_operator_surface/).
FILES: list[str] = [
    "0016_operator_surface/taskhub_operator_roles.sql",
    "0016_operator_surface/taskhub_operator_privileges.sql",
    "0016_operator_surface/instances_created_idx.sql",
    "functions/ack_worker/0016.sql",
    "functions/cleanup_schema/0016.sql",
    "functions/enqueue_orchestrator_work/0016.sql",
    "functions/taskhub_rebuild_runtime_ddl_guard/0016.sql",
    "functions/taskhub_refresh_runtime_roles/0016.sql",
    "functions/taskhub_set_runtime_privileges/0016.sql",
    "functions/taskhub_find_instances/0016.sql",
    "functions/taskhub_grant_operator_role/0016.sql",
    "functions/taskhub_revoke_operator_role/0016.sql",
    "functions/taskhub_set_operator_privileges/0016.sql",
    "functions/taskhub_settings_besides_guarded_roles/0016.sql",
    "0016_operator_surface/runtime_privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_worker/0015.sql": ["ack_worker"],
    "functions/cleanup_schema/0015.sql": ["cleanup_schema"],
    "functions/enqueue_orchestrator_work/0015.sql": ["enqueue_orchestrator_work"],
    "0005_least_privilege/runtime_roles.sql": [
        "taskhub_rebuild_runtime_ddl_guard",
        "taskhub_refresh_runtime_roles",
        "taskhub_set_runtime_privileges",
    ],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_find_instances",
    "taskhub_grant_operator_role",
    "taskhub_revoke_operator_role",
    "taskhub_set_operator_privileges",
    "taskhub_settings_besides_guarded_roles",
]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    apply_sql_files(
        [
            "0016_operator_surface/downgrade_operator_roles.sql",
            # One statement each: Citus sends a DROP INDEX's whole text to the workers.
            "0016_operator_surface/drop_taskhub_operator_roles.sql",
            "0016_operator_surface/drop_taskhub_operator_privileges.sql",
            "0016_operator_surface/drop_instances_created_idx.sql",
        ]
    )
    drop_functions(NEW_FUNCTIONS)
