"""Poolers and failover.

* A start safe to repeat: taskhub_start_orchestration (new) queues the
  StartOrchestration work item unless the instance exists or a start of it
  is queued, and says which (true: started; false: it already exists). A
  caller that did not hear the outcome of a start (a failover, a lost
  connection) repeats it with the same instance id. Two starts of one id
  serialize on a transaction lock of that id.
* The shield knows a transaction pooler's prepared-statement failures
  (26000, 42P05, 08P01 "bind message supplies ..."): the released runtime's
  driver names its statements, and through a transaction pooler they reach
  other server connections. Such a turn is given back for redelivery
  (taskhub_transient_conditions, one new condition) instead of failing its
  orchestration for good.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0025.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0025_poolers_and_failover/).
FILES: list[str] = [
    "functions/taskhub_transient_conditions/0025.sql",
    "functions/taskhub_start_orchestration/0025.sql",
    "0025_poolers_and_failover/runtime_privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "0007_fault_tolerance/transient_failures.sql": ["taskhub_transient_conditions"]
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_start_orchestration"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0025_poolers_and_failover/down.sql"])
