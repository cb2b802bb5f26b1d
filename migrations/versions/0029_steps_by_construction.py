"""Steps by construction (issue 54).

Schedules that cannot stop each other:

* taskhub_set_schedule holds a schedule to the start's own limits before it
  writes anything: names, version and cron expression at most
  taskhub_max_id_bytes, an input a fetch can hand over, and a start of each
  tick (taskhub_schedule_start, new: the text a fire queues) at most
  taskhub_max_payload_bytes (body only: its arguments and result stay).
* taskhub_fire_schedule_outcome (new) starts a tick in a subtransaction of
  its own: a start the hub refuses is undone and counted against its
  schedule (taskhub_count_schedule_failure, new), which is paused after
  schedule_pause_after_failures (a new setting, 5, and taskhub_check_drift
  names a value out of range: body only) in a row, and the call
  returns; a passing condition of the server (taskhub_transient_sqlstate,
  new) is raised as it is. taskhub_fire_schedule runs it and keeps its
  boolean (body only), so a scheduler of 0027 fires on, and a resume or a
  change of a schedule sets its count back to 0 (bodies only).
* taskhub_schedules gets three columns (failures, last_error,
  paused_reason), a change of the catalog alone; taskhub_read_schedules
  (new) lists them, and taskhub_list_schedules keeps its result type.

Privileged steps that execute nothing the owner controls:

* A session that can do more than the hub's owner calls none of the hub's
  functions (provider/deploy/privileged_session.py): the runtime DDL guard
  is the database's, in a schema of the role that installs it
  (sql/guard/, provider/deploy/ddl_guard.py), and the owner's role functions
  ask it. taskhub_guard_names (new) says whether it names a role for this
  hub (the hub's own guard of 0005-0028 still counts until a guard step
  moves it); taskhub_set_runtime_privileges gives a guarded role CREATE only
  then, and taskhub_database_create_needed_elsewhere reads it too; a
  grant does not count a CREATE on the database the guard's step gave as
  the role's own (taskhub_guard_gave_database_create, new).
* taskhub_grant_runtime_role refuses a guarded grant until the guard names
  the role, instead of making the guard; it, taskhub_revoke_runtime_role,
  taskhub_refresh_runtime_roles and taskhub_distribute_on_citus no longer
  change the guard, and taskhub_rebuild_runtime_ddl_guard,
  taskhub_can_create_event_triggers and taskhub_settings_besides_guarded_roles
  go (nothing calls them).
* The role functions refuse a privileged caller
  (taskhub_refuse_privileged_caller, new): a courtesy, not a boundary.

Viewer pages of bounded cost: taskhub_search_instances (the dashboard's
list, `inspect instances`) no longer parses every pending start whole before
its LIMIT: the orchestration's name comes from a start's first 4 KB (a start
written otherwise is parsed whole), and the version, for the page's rows
only, from a start of at most 64 KB. Body only.

New objects and function bodies: no argument list or result type changes,
so no running runtime or scheduler notices.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
# Schedules: taskhub_schedules gets its columns. Not a table of the hot path,
# so the run takes it before it closes the call gate: a scheduler of 0027
# holds its row while it waits for the gate (taskhub_settings gets a row, no
# check, for that reason).
SCHEDULE_TABLES = ["taskhub_schedules"]
LOCKS_ON_UPGRADE: list[str] = [*SCHEDULE_TABLES]
LOCKS_ON_DOWNGRADE: list[str] = [*SCHEDULE_TABLES]

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0029.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0029_steps_by_construction/).
# Schedules: the columns before the functions that read them (a SQL body is
# checked when it is created), each helper before its caller.
SCHEDULE_FILES: list[str] = [
    "0029_steps_by_construction/schedules_table.sql",
    "0029_steps_by_construction/schedules_settings.sql",
    "functions/taskhub_transient_sqlstate/0029.sql",
    "functions/taskhub_schedule_start/0029.sql",
    "functions/taskhub_count_schedule_failure/0029.sql",
    "functions/taskhub_fire_schedule_outcome/0029.sql",
    "functions/taskhub_fire_schedule/0029.sql",
    "functions/taskhub_pause_schedule/0029.sql",
    "functions/taskhub_set_schedule/0029.sql",
    "functions/taskhub_read_schedules/0029.sql",
    "functions/taskhub_check_drift/0029.sql",
    "0029_steps_by_construction/schedules_privileges.sql",
]
# Privileged steps: the owner's side of the guard, and the courtesy refusal.
PRIVILEGE_FILES: list[str] = [
    "functions/taskhub_refuse_privileged_caller/0029.sql",
    "functions/taskhub_guard_names/0029.sql",
    "functions/taskhub_guard_gave_database_create/0029.sql",
    "functions/taskhub_database_create_needed_elsewhere/0029.sql",
    "functions/taskhub_set_runtime_privileges/0029.sql",
    "functions/taskhub_grant_runtime_role/0029.sql",
    "functions/taskhub_revoke_runtime_role/0029.sql",
    "functions/taskhub_refresh_runtime_roles/0029.sql",
    "functions/taskhub_grant_operator_role/0029.sql",
    "functions/taskhub_revoke_operator_role/0029.sql",
    "functions/taskhub_distribute_on_citus/0029.sql",
]
# Viewer pages of bounded cost: a pending start is listed without parsing
# its input (taskhub_search_instances, body only).
SEARCH_FILES: list[str] = ["functions/taskhub_search_instances/0029.sql"]
FILES: list[str] = [*SCHEDULE_FILES, *PRIVILEGE_FILES, *SEARCH_FILES]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/taskhub_fire_schedule/0027.sql": ["taskhub_fire_schedule"],
    "functions/taskhub_pause_schedule/0027.sql": ["taskhub_pause_schedule"],
    "functions/taskhub_set_schedule/0027.sql": ["taskhub_set_schedule"],
    "functions/taskhub_check_drift/0012.sql": ["taskhub_check_drift"],
    "functions/taskhub_database_create_needed_elsewhere/0024.sql": [
        "taskhub_database_create_needed_elsewhere"
    ],
    "functions/taskhub_set_runtime_privileges/0024.sql": ["taskhub_set_runtime_privileges"],
    "functions/taskhub_grant_runtime_role/0024.sql": ["taskhub_grant_runtime_role"],
    "functions/taskhub_revoke_runtime_role/0023.sql": ["taskhub_revoke_runtime_role"],
    "functions/taskhub_refresh_runtime_roles/0016.sql": ["taskhub_refresh_runtime_roles"],
    "functions/taskhub_grant_operator_role/0024.sql": ["taskhub_grant_operator_role"],
    "functions/taskhub_revoke_operator_role/0016.sql": ["taskhub_revoke_operator_role"],
    "functions/taskhub_distribute_on_citus/0022.sql": ["taskhub_distribute_on_citus"],
    "functions/taskhub_search_instances/0028.sql": ["taskhub_search_instances"],
}
# Dropped by the upgrade (nothing calls them any more); the downgrade puts
# them back from these released files.
DROPPED: dict[str, list[str]] = {
    "functions/taskhub_rebuild_runtime_ddl_guard/0024.sql": ["taskhub_rebuild_runtime_ddl_guard"],
    "functions/taskhub_can_create_event_triggers/0024.sql": ["taskhub_can_create_event_triggers"],
    "functions/taskhub_settings_besides_guarded_roles/0016.sql": [
        "taskhub_settings_besides_guarded_roles"
    ],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_count_schedule_failure",
    "taskhub_fire_schedule_outcome",
    "taskhub_read_schedules",
    "taskhub_schedule_start",
    "taskhub_transient_sqlstate",
    "taskhub_guard_names",
    "taskhub_guard_gave_database_create",
    "taskhub_refuse_privileged_caller",
]
# The downgrade's own statements, after the functions are back and dropped.
DOWN_FILES: list[str] = ["0029_steps_by_construction/schedules_down.sql"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])
    drop_functions([name for names in DROPPED.values() for name in names])


def downgrade() -> None:
    replace_with_released(list(DROPPED), DROPPED)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(DOWN_FILES)
