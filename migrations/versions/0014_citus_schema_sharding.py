"""Hubs on a Citus cluster: taskhub_distribute_on_citus() distributes the
schema (schema-based sharding: the hub on one node) and gives the functions
that plan with force_generic_plan PostgreSQL's default back, since Citus
cannot plan an INSERT ... SELECT with parameters as a generic plan. The
migration runner calls it with `-x citus=schema`, and after every run that
applied a revision to a distributed hub.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes, each way: every run that
# applies it locks them up front, in the hot path's order
# (provider/deploy/table_locks.py).
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0014.sql, whole or a patch on the version before).
FILES: list[str] = ["functions/taskhub_distribute_on_citus/0014.sql"]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_distribute_on_citus"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    # A distributed hub comes back to the coordinator before anything else.
    apply_sql_files(["0014_citus_schema_sharding/down.sql"])
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
