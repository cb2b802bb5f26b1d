"""The statements a migration run and the role steps send for a hub that
Citus may have distributed (docs/scale-out.md): each does nothing elsewhere.
Where a hub is and how it moves: provider/operations/citus.py."""

from __future__ import annotations

from provider.schema_name import quote_schema


def on_a_distributed_hub(schema: str, function: str) -> str:
    """A DO block that calls the hub's `function` when the hub has it and is
    distributed on Citus (and does nothing elsewhere)."""
    quoted = quote_schema(schema)
    return f"""
DO $citus$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL
       AND to_regproc('{quoted}.{function}') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema
                    WHERE schemaid = to_regnamespace('{quoted}')) THEN
            PERFORM {quoted}.{function}();
        END IF;
    END IF;
END
$citus$
"""
