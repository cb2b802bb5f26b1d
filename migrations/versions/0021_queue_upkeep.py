"""Queue upkeep, from what the soak (make soak) showed:

* autovacuum settings for the tables every turn and activity churns
  (orchestrator_queue, worker_queue, instance_locks): a vacuum once 1,000
  dead rows plus 2 % of the live ones are there, never throttled, so that a
  queue holding a backlog is vacuumed as often as an empty one (docs/ops.md,
  "Maintenance");
* fetch_work_item takes the oldest item by when it became visible, walking
  taskhub_worker_visible_idx up to now: a backlog of work due later (items
  given back with a delay) no longer costs every fetch a read past it.

Storage parameters and a body: no signature, column or index changes, so no
running runtime notices.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, replace_with_released

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
# (SET and RESET of storage parameters take SHARE UPDATE EXCLUSIVE.)
LOCKS_ON_UPGRADE: list[str] = ["orchestrator_queue", "instance_locks", "worker_queue"]
LOCKS_ON_DOWNGRADE: list[str] = ["orchestrator_queue", "instance_locks", "worker_queue"]

# This revision's files (sql/0021_.../: queue_upkeep.sql holds the statements
# each table's file in sql/head/tables/ ends with), applied in order.
FILES: list[str] = [
    "0021_queue_upkeep/queue_upkeep.sql",
    "0021_queue_upkeep/fetch_work_item.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0018_lean_acks/fetch_work_item.sql": ["fetch_work_item"],
}


def upgrade() -> None:
    apply_sql_files(FILES)


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    apply_sql_files(["0021_queue_upkeep/down.sql"])
