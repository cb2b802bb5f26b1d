"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

A released revision never changes. To change a function, ship a new SQL file
under sql/<this revision>/ and apply it here; downgrade restores the previous
revision's file.
"""

from __future__ import annotations

from provider.migration_steps import apply_sql_files

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []


def upgrade() -> None:
    apply_sql_files([])


def downgrade() -> None:
    apply_sql_files([])
