"""Trace contexts: the W3C trace context a traced start_orchestration or
raise_event was called in, kept by instance in taskhub_trace_contexts, so
that the workers running the instance's activities continue that trace.

taskhub_enqueue_traced_orchestrator_work writes the message and the context
in one transaction; taskhub_trace_context reads an instance's (or its
nearest ancestor's). delete_instances_atomic deletes the context with the
instance, and cleanup_schema drops the table: both keep their signatures,
so no running runtime notices. No table of the runtime's is altered: the
upgrade locks nothing, the downgrade only the table it drops.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = ["taskhub_trace_contexts"]  # dropped

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0019.sql, whole or a patch on the version before)
# and its own files, written by hand (sql/0019_trace_contexts/).
FILES: list[str] = [
    # The table first: the functions below use it.
    "0019_trace_contexts/trace_contexts.sql",
    "functions/cleanup_schema/0019.sql",
    "functions/delete_instances_atomic/0019.sql",
    "functions/taskhub_enqueue_traced_orchestrator_work/0019.sql",
    "functions/taskhub_trace_context/0019.sql",
]
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/cleanup_schema/0016.sql": ["cleanup_schema"],
    "functions/delete_instances_atomic/0015.sql": ["delete_instances_atomic"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = ["taskhub_enqueue_traced_orchestrator_work", "taskhub_trace_context"]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
    # Last: the released delete_instances_atomic and cleanup_schema are back,
    # and nothing refers to the table any more.
    apply_sql_files(["0019_trace_contexts/down.sql"])
