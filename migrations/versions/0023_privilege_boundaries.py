"""Privilege boundaries: what a superuser's step runs is the package's code,
and an operator role does what the runbook says, and nothing more.

* The runtime DDL guard's list of roles is the guard's own (a SET clause of
  its function, which only the superuser that installed it can change):
  taskhub_rebuild_runtime_ddl_guard takes the role to add or take out, and
  never reads it from taskhub_runtime_roles, a table the hub's owner writes.
* A runtime role gets CREATE (schema, database) only while the guard names
  it; taskhub_set_runtime_privileges puts only EXECUTE and SELECT from
  taskhub_runtime_privileges into a GRANT, whatever a row says.
* taskhub_revoke_runtime_role takes the role off the guard even when the
  owner's record no longer names it.

* The operator loses EXECUTE on enqueue_orchestrator_work and
  taskhub_enqueue_traced_orchestrator_work (they take any work item: any
  start, a forged ActivityCompleted) and on abandon_work_item (any delay: an
  activity held back for a century). It gets three SECURITY DEFINER
  functions instead: taskhub_cancel_instance and taskhub_raise_event build
  the CancelInstance and ExternalRaised the duroxide client writes (with the
  caller's W3C trace context when given), and refuse an instance that does
  not exist (P0002) or has ended (55000); taskhub_release_work_item_lease
  gives an activity back at once, with no delay to ask for.
* The operator's SELECT is granted on the hub's own tables and views, by
  name (rows of taskhub_operator_privileges), never ON ALL TABLES IN SCHEMA:
  a hub in `public` sits beside an application's tables. The upgrade takes
  back the SELECT that revisions 0016-0022 gave every operator role on the
  schema's other tables. taskhub_set_operator_privileges puts only
  whitelisted privilege words into its statements.
* dead_letter_after_attempts is checked: a whole number of at least 2. A hub
  holding another value (every fetch that redelivered failed on it) gets
  the default, 50, back, with a warning naming the value.

The runtime's functions keep their signatures and bodies; its roles keep
their grants.

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
# taskhub_settings gets a check; the operators' list gets SELECT rows.
LOCKS_ON_UPGRADE: list[str] = ["taskhub_settings", "taskhub_operator_privileges"]
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_settings", "taskhub_operator_privileges"]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0023.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/taskhub_grant_runtime_role/0023.sql",
    "functions/taskhub_rebuild_runtime_ddl_guard/0023.sql",
    "functions/taskhub_revoke_runtime_role/0023.sql",
    "functions/taskhub_set_runtime_privileges/0023.sql",
    "functions/taskhub_set_operator_privileges/0023.sql",
    "functions/taskhub_cancel_instance/0023.sql",
    "functions/taskhub_raise_event/0023.sql",
    "functions/taskhub_release_work_item_lease/0023.sql",
    "functions/taskhub_status_unless_ended/0023.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0007_fault_tolerance/runtime_roles.sql": [
        "taskhub_grant_runtime_role",
        "taskhub_revoke_runtime_role",
    ],
    "functions/taskhub_rebuild_runtime_ddl_guard/0022.sql": ["taskhub_rebuild_runtime_ddl_guard"],
    "functions/taskhub_set_runtime_privileges/0016.sql": ["taskhub_set_runtime_privileges"],
    "functions/taskhub_set_operator_privileges/0016.sql": ["taskhub_set_operator_privileges"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_cancel_instance",
    "taskhub_raise_event",
    "taskhub_release_work_item_lease",
    "taskhub_status_unless_ended",
]


def upgrade() -> None:
    apply_sql_files(
        [
            # DDL one statement a file: Citus forwards a distributed table's DDL whole.
            "0023_privilege_boundaries/operator_privileges_check.sql",
            "0023_privilege_boundaries/settings_reset.sql",
            "0023_privilege_boundaries/settings_check.sql",
            # The guard's rebuild takes arguments now: its old form goes first.
            "0023_privilege_boundaries/drop_rebuild_without_arguments.sql",
            *FILES,
            "0023_privilege_boundaries/operator_privileges.sql",
            # Like every function of the schema, the new ones are not
            # executable by PUBLIC.
            "0006_hot_path/no_public_execute.sql",
            # Last: the operators get the list above and lose what it no longer names.
            "0023_privilege_boundaries/operator_roles.sql",
        ]
    )


def downgrade() -> None:
    apply_sql_files(
        [
            "0023_privilege_boundaries/down_settings.sql",
            "0023_privilege_boundaries/down_operator_privileges.sql",
            "0023_privilege_boundaries/down_operator_privileges_check.sql",
            "0023_privilege_boundaries/down.sql",
        ]
    )
    # 0022's functions; its taskhub_set_operator_privileges: the run's refresh
    # (migrations/env.py) gives the operators 0022's grants back.
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
