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

# This revision's files (sql/0029_.../, copied from sql/head/), applied in order.
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
FILES: list[str] = [*SCHEDULE_FILES]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/taskhub_fire_schedule/0027.sql": ["taskhub_fire_schedule"],
    "functions/taskhub_pause_schedule/0027.sql": ["taskhub_pause_schedule"],
    "functions/taskhub_set_schedule/0027.sql": ["taskhub_set_schedule"],
    "functions/taskhub_check_drift/0012.sql": ["taskhub_check_drift"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_count_schedule_failure",
    "taskhub_fire_schedule_outcome",
    "taskhub_read_schedules",
    "taskhub_schedule_start",
    "taskhub_transient_sqlstate",
]
# The downgrade's own statements, after the functions are back and dropped.
DOWN_FILES: list[str] = ["0029_steps_by_construction/schedules_down.sql"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(DOWN_FILES)
