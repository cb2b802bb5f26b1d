"""Plans that keep queues clean (issue 39: retention at 60/s).

* The hot path never plans a bitmap scan (fetch_orchestration_item,
  fetch_work_item, ack_orchestration_item, ack_worker: SET enable_bitmapscan
  = off). A bitmap scan never marks the index entries of deleted messages
  dead. When the generic plans of a small, churning queue came out as bitmap
  scans of its visible_at index (which statistics, re-read at every ANALYZE,
  decided), the entries of every message consumed since the last VACUUM
  were read again by every fetch: at 60 orchestrations a second a fetch went
  from 0.6 ms to 5 ms within a minute, and start-to-completion p99 from
  0.13 s to 0.4-0.7 s, each time retention had just run.
* fetch_orchestration_item reads an instance's messages by the instance's
  index only (the visible test is one expression no index serves): a walk
  of the visible_at index for one instance read every visible message.
* taskhub_dispatch_lag_ms (new, operator): how long the oldest message a
  dispatcher could take has waited. Retention waits while it is above its
  busy threshold.

Function settings, bodies and a new function: no argument list or result
type changes, so no running runtime notices.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_functions,
    replace_fetch_keeping_its_form,
    replace_with_released,
)

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0026.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0026_plans_that_keep_queues_clean/).
FILES: list[str] = [
    "functions/ack_orchestration_item/0026.sql",
    "functions/ack_worker/0026.sql",
    "functions/fetch_work_item/0026.sql",
    "functions/taskhub_dispatch_lag_ms/0026.sql",
    "0026_plans_that_keep_queues_clean/operator_privileges.sql",
]
# The fetch's __TURN_FORM__ is json or jsonb: it is replaced in the form the
# hub's fetch hands over now (provider/deploy/turn_form.py), both ways.
FETCH = "functions/fetch_orchestration_item/0026.sql"
RELEASED_FETCH = "functions/fetch_orchestration_item/0024.sql"
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0024.sql": ["ack_orchestration_item"],
    "functions/ack_worker/0024.sql": ["ack_worker"],
    "functions/fetch_work_item/0022.sql": ["fetch_work_item"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_dispatch_lag_ms"]


def upgrade() -> None:
    apply_sql_files(FILES)
    replace_fetch_keeping_its_form(FETCH)
    # Last: like every function of the schema, the new one is not executable
    # by PUBLIC.
    apply_sql_files(["0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    apply_sql_files(["0026_plans_that_keep_queues_clean/down.sql"])
    replace_fetch_keeping_its_form(RELEASED_FETCH)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
