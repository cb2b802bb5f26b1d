"""The application client and schedules (issue 40).

* taskhub_start_orchestrations (new): starts, each once, all or none, with
  a repeat that differs refused (23505): Client.start and start_many. A
  batch locks stripes of ids (taskhub_start_stripe_key), at most 1024;
  taskhub_start_orchestration holds its id's stripe shared, so the two
  serialize on the same id (body only: its arguments and result stay).
* The runtime role may call taskhub_cancel_instance and taskhub_raise_event
  (the operator's, which refuse unknown and ended instances): the client's
  cancel and raise_event.
* taskhub_schedules (new table) and its functions: set, pause (and resume),
  remove, list, and fire (a tick taken once, under the schedule's row lock);
  cleanup_schema drops the table too (its body only).

New objects and one function body: no argument list or result type changes,
so no running runtime notices.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-05
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_schedules"]  # dropped

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0027.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0027_application_client_and_schedules/).
FILES: list[str] = [
    "0027_application_client_and_schedules/taskhub_schedules.sql",
    "functions/taskhub_start_orchestration/0027.sql",
    "functions/taskhub_existing_start/0027.sql",
    "functions/taskhub_fire_schedule/0027.sql",
    "functions/taskhub_list_schedules/0027.sql",
    "functions/taskhub_pause_schedule/0027.sql",
    "functions/taskhub_remove_schedule/0027.sql",
    "functions/taskhub_set_schedule/0027.sql",
    "functions/taskhub_start_orchestrations/0027.sql",
    "functions/taskhub_start_stripe_key/0027.sql",
    "functions/cleanup_schema/0027.sql",
    "0027_application_client_and_schedules/privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/taskhub_start_orchestration/0025.sql": ["taskhub_start_orchestration"],
    "functions/cleanup_schema/0019.sql": ["cleanup_schema"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_existing_start",
    "taskhub_fire_schedule",
    "taskhub_list_schedules",
    "taskhub_pause_schedule",
    "taskhub_remove_schedule",
    "taskhub_set_schedule",
    "taskhub_start_orchestrations",
    "taskhub_start_stripe_key",
]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0027_application_client_and_schedules/down.sql"])
