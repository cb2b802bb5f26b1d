"""One table per statement on the hot path, for Citus.

On a hub distributed by Citus, a statement that reads or writes one table,
with no subquery, no join and no volatile call, takes Citus's fast path: it
is planned on the hub's node like a plain statement, once per session. A
join, a subquery or an INSERT ... SELECT costs a distributed plan, a deparse
and a new parse and plan of the shard query on every call. The per-statement
profile on a coordinator with two workers showed those statements at 5 to 40
times their plain cost, and the turn at a third of plain PostgreSQL's speed.

* fetch_orchestration_item reads the queue in pages along (visible_at, id)
  and asks instance_locks about a page's instances in one read; it locks an
  instance's messages in a loop (and reads their work items there), counts
  the visible ones after, and reads the instance's metadata and current
  execution in one-table reads. A version range is checked by
  taskhub_outside_version_range (two one-table reads, new).
* ack_orchestration_item, on a server that runs Citus, inserts history
  events, activities and messages one VALUES row at a time, with queue ids
  drawn before the INSERT (elsewhere one INSERT ... SELECT an array, as
  before), and asks for waiting listeners with a one-table read.
* fetch_work_item scans the queue alone; an item of a session held live by
  another owner is found out under lock, and then every session held so is
  read at once and left out of the next scans.
* ack_worker, on Citus, asks for waiting listeners in a statement of its
  own (elsewhere it rides on the DELETE's RETURNING, as before), and draws
  the completion's id first.
* What a runtime calls besides, on every start or while it waits for an
  orchestration, follows the same rule: enqueue_orchestrator_work and
  enqueue_worker_work draw the id (and the clock) first and ask for
  listeners in a statement of their own; fetch_history reads the latest
  execution, then its events.
* taskhub_distribute_on_citus keeps force_generic_plan on the hot path (it
  reset it since 0014, for the INSERT ... SELECT statements now gone) and
  sets it back on a hub distributed before; the helpers the hot path calls
  that hold an INSERT ... SELECT get force_custom_plan on Citus; it rebuilds
  the runtime DDL guard, which on a distributed hub is now put on every
  worker too (taskhub_rebuild_runtime_ddl_guard): an event trigger is a
  node's own, and a runtime role may connect to the hub's node.

Bodies only: no signature, result type or table changes, so no running
runtime notices.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_functions,
    replace_fetch_keeping_its_form,
    replace_with_released,
)

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# No table is altered, dropped or indexed.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0022.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/taskhub_outside_version_range/0022.sql",
    "functions/ack_orchestration_item/0022.sql",
    "functions/fetch_work_item/0022.sql",
    "functions/ack_worker/0022.sql",
    "functions/enqueue_orchestrator_work/0022.sql",
    "functions/enqueue_worker_work/0022.sql",
    "functions/fetch_history/0022.sql",
    "functions/taskhub_rebuild_runtime_ddl_guard/0022.sql",
    "functions/taskhub_distribute_on_citus/0022.sql",
]
# The fetch's __TURN_FORM__ is json or jsonb: it is replaced in the form the
# hub's fetch hands over now (provider/deploy/turn_form.py), both ways.
FETCH = "functions/fetch_orchestration_item/0022.sql"
RELEASED_FETCH = "functions/fetch_orchestration_item/0017.sql"
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/ack_orchestration_item/0018.sql": ["ack_orchestration_item"],
    "functions/fetch_work_item/0021.sql": ["fetch_work_item"],
    "functions/ack_worker/0021.sql": ["ack_worker"],
    "functions/enqueue_orchestrator_work/0016.sql": ["enqueue_orchestrator_work"],
    "functions/enqueue_worker_work/0015.sql": ["enqueue_worker_work"],
    "functions/fetch_history/0015.sql": ["fetch_history"],
    "functions/taskhub_rebuild_runtime_ddl_guard/0016.sql": ["taskhub_rebuild_runtime_ddl_guard"],
    "functions/taskhub_distribute_on_citus/0014.sql": ["taskhub_distribute_on_citus"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_outside_version_range"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files(FILES[:1])
    replace_fetch_keeping_its_form(FETCH)
    apply_sql_files(
        [
            *FILES[1:],
            "0006_hot_path/no_public_execute.sql",
            # Last: a distributed hub's settings in this very transaction.
            "0022_one_table_statements/redistribute.sql",
        ]
    )


def downgrade() -> None:
    apply_sql_files(["0022_one_table_statements/down_worker_guards.sql"])
    replace_fetch_keeping_its_form(RELEASED_FETCH)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
