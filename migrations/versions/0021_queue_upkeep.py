"""Queue upkeep, from what the soak (make soak) showed:

* autovacuum settings for the tables every turn and activity churns
  (orchestrator_queue, worker_queue, instance_locks): a vacuum once 1,000
  dead rows plus 2 % of the live ones are there, never throttled, so that a
  queue holding a backlog is vacuumed as often as an empty one (docs/ops.md,
  "Maintenance");
* fetch_work_item takes the oldest item by when it became visible, walking
  taskhub_worker_visible_idx up to now: a backlog of work due later (items
  given back with a delay) no longer costs every fetch a read past it;
* a worker lease token names its item ('lock_<id>_<uuid>'): ack, renew and
  abandon find the item by primary key, worker_queue loses its index on
  lock_token, and the fetch's lease tag becomes a HOT update (the soak saw
  0 % HOT on worker_queue, 100 % on orchestrator_queue since 0018). A token
  handed out before the upgrade is still found, by a read of the queue.

Storage parameters, bodies and an index: no signature or column changes, so
no running runtime notices.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

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

# This revision's files (sql/0021_.../: upkeep_*.sql hold the statement each
# table's file in sql/head/tables/ ends with, one a file as Citus needs),
# applied in order.
FILES: list[str] = [
    "0021_queue_upkeep/upkeep_orchestrator_queue.sql",
    "0021_queue_upkeep/upkeep_instance_locks.sql",
    "0021_queue_upkeep/upkeep_worker_queue.sql",
    "functions/taskhub_worker_item_of_token/0021.sql",
    "functions/fetch_work_item/0021.sql",
    "functions/taskhub_lock_worker_lease/0021.sql",
    "functions/ack_worker/0021.sql",
    "functions/abandon_work_item/0021.sql",
    # Last: every lookup by token alone is gone.
    "0021_queue_upkeep/drop_worker_lock_idx.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/fetch_work_item/0018.sql": ["fetch_work_item"],
    "functions/taskhub_lock_worker_lease/0008.sql": ["taskhub_lock_worker_lease"],
    "functions/ack_worker/0018.sql": ["ack_worker"],
    "functions/abandon_work_item/0015.sql": ["abandon_work_item"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_worker_item_of_token"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    # The index first: the released functions find items by token alone.
    apply_sql_files(["0021_queue_upkeep/worker_lock_idx.sql"])
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(
        [
            "0021_queue_upkeep/down_orchestrator_queue.sql",
            "0021_queue_upkeep/down_instance_locks.sql",
            "0021_queue_upkeep/down_worker_queue.sql",
        ]
    )
