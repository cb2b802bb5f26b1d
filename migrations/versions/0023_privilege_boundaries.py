"""Privilege boundaries: what a superuser's step runs is the package's code.

* The runtime DDL guard's list of roles is the guard's own (a SET clause of
  its function, which only the superuser that installed it can change):
  taskhub_rebuild_runtime_ddl_guard takes the role to add or take out, and
  never reads it from taskhub_runtime_roles, a table the hub's owner writes.
* A runtime role gets CREATE (schema, database) only while the guard names
  it; taskhub_set_runtime_privileges puts only EXECUTE and SELECT from
  taskhub_runtime_privileges into a GRANT, whatever a row says.
* taskhub_revoke_runtime_role takes the role off the guard even when the
  owner's record no longer names it.

No function the runtime calls changes.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-03
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files (sql/0023_.../, copied from sql/head/), applied in order.
FILES: list[str] = [
    "0023_privilege_boundaries/drop_rebuild_without_arguments.sql",
    "0023_privilege_boundaries/taskhub_grant_runtime_role.sql",
    "0023_privilege_boundaries/taskhub_rebuild_runtime_ddl_guard.sql",
    "0023_privilege_boundaries/taskhub_revoke_runtime_role.sql",
    "0023_privilege_boundaries/taskhub_set_runtime_privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0007_fault_tolerance/runtime_roles.sql": [
        "taskhub_grant_runtime_role",
        "taskhub_revoke_runtime_role",
    ],
    "0022_one_table_statements/taskhub_rebuild_runtime_ddl_guard.sql": [
        "taskhub_rebuild_runtime_ddl_guard"
    ],
    "0016_operator_surface/taskhub_set_runtime_privileges.sql": ["taskhub_set_runtime_privileges"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = []


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    apply_sql_files(["0023_privilege_boundaries/down.sql"])
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
