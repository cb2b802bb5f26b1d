"""The turn handed over as json: fetch_orchestration_item returns its
history, messages and KV snapshot as json (the stored text, validated once)
instead of jsonb (parsed, built and printed again on every fetch).

A hub this run creates gets json. A hub that existed before keeps jsonb (the
body is the same): its runtimes have the result type prepared, and a changed
type would fail every fetch until they reconnect. `taskhub-pg history-format
json --schema S` switches it, with its runtimes stopped
(provider/deploy/turn_form.py).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    create_fetch_in_turn_form,
    drop_fetch_of_form,
    replace_with_released,
)

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# A runtime's prepared fetch fails if its result type changes: on upgrade it
# changes only on a hub the run creates (no runtime can have it prepared); a
# downgrade of a json hub changes it back, so stop its runtimes first (the
# command line says so before it asks).
CHANGES_RESULT_TYPE_ON_DOWNGRADE = ["fetch_orchestration_item"]

# The fetch (sql/functions/fetch_orchestration_item/0017.sql, whose
# __TURN_FORM__ is json or jsonb) is made by create_fetch_in_turn_form; the
# downgrade puts back the released one.
REPLACED: dict[str, list[str]] = {
    "functions/fetch_orchestration_item/0015.sql": ["fetch_orchestration_item"]
}


def upgrade() -> None:
    create_fetch_in_turn_form()
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files(["0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    drop_fetch_of_form("jsonb")  # a json fetch goes: the released one is jsonb
    replace_with_released(list(REPLACED), REPLACED)
