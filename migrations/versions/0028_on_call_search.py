"""The on-call search (issue 40).

* taskhub_search_instances (new): taskhub_find_instances' search, and by
  the start of an instance ID (p_id_prefix) and any part of the
  orchestration's name in either case (p_name_contains): the dashboard's
  search, `taskhub-pg inspect instances --id-prefix/--name-contains`, the
  client's find. Granted to runtime and operator roles.
* taskhub_find_instances runs it (its body only: its arguments and result
  stay), so the search lives in one place.

A new function and one function body: no argument list or result type
changes, so no running runtime notices.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-05
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0028.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0028_on_call_search/).
FILES: list[str] = [
    # The search first: find's SQL body names it, and is checked when created.
    "functions/taskhub_search_instances/0028.sql",
    "functions/taskhub_find_instances/0028.sql",
    "0028_on_call_search/privileges.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/taskhub_find_instances/0016.sql": ["taskhub_find_instances"]
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_search_instances"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    apply_sql_files(["0028_on_call_search/down.sql"])
