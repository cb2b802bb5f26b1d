"""Kept for the released revisions, whose files import it from here: the
steps live in provider.deploy.migration_steps."""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_and_restore_functions,
    drop_functions,
    replace_with_released,
    set_aside_functions,
)

__all__ = [
    "apply_sql_files",
    "drop_and_restore_functions",
    "drop_functions",
    "replace_with_released",
    "set_aside_functions",
]
