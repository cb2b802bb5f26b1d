"""What a schema holds, as the catalogue reports it, with the schema's name
taken out: to compare two schemas built in different ways. A privilege list
the catalogue leaves NULL (the defaults) is written out, so that the same
privileges compare equal however they were granted, in any order."""

from __future__ import annotations

from typing import Any

import psycopg

# Alembic's own bookkeeping, absent from a schema built from sql/head/.
ALEMBIC_TABLE = "taskhub_pg_alembic_version"
# Tables whose rows are part of the schema (seeded by the revisions).
SEEDED = {
    "taskhub_settings": "name, value, description",
    "_duroxide_migrations": "version, name",
    "taskhub_runtime_privileges": "object_kind, object_name, privilege, needed_by",
    "taskhub_operator_privileges": "object_kind, object_name, privilege, columns, needed_by",
}

QUERIES = {
    "functions": """
        SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid), p.prosecdef,
               p.proconfig::text,
               (SELECT array_agg(a::text ORDER BY a::text)
                  FROM unnest(coalesce(p.proacl, acldefault('f', p.proowner))) AS a)::text
          FROM pg_proc AS p WHERE p.pronamespace = %(schema)s::regnamespace""",
    "columns": """
        SELECT c.relname, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
               a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attstorage, a.attcompression
          FROM pg_attribute AS a
          JOIN pg_class AS c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind IN ('r', 'v')
           AND a.attnum > 0 AND NOT a.attisdropped AND c.relname <> %(alembic)s""",
    "relations": """
        SELECT c.relname, c.relkind, c.reloptions::text,
               (SELECT array_agg(a::text ORDER BY a::text)
                  FROM unnest(coalesce(
                           c.relacl,
                           acldefault((CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END)::"char",
                                      c.relowner))) AS a)::text
          FROM pg_class AS c
         WHERE c.relnamespace = %(schema)s::regnamespace
           AND c.relname NOT LIKE %(alembic)s || '%%'""",
    "indexes": """
        SELECT indexname, indexdef FROM pg_indexes
         WHERE schemaname = %(schema)s AND tablename <> %(alembic)s""",
    "constraints": """
        SELECT t.relname, c.conname, pg_get_constraintdef(c.oid)
          FROM pg_constraint AS c JOIN pg_class AS t ON t.oid = c.conrelid
         WHERE c.connamespace = %(schema)s::regnamespace AND t.relname <> %(alembic)s""",
    "views": """
        SELECT c.relname, pg_get_viewdef(c.oid)
          FROM pg_class AS c
         WHERE c.relnamespace = %(schema)s::regnamespace AND c.relkind = 'v'""",
}


def snapshot(conn: psycopg.Connection[Any], schema: str) -> dict[str, list[tuple[str, ...]]]:
    """Every function, column, relation, index, constraint and view of
    `schema`, and the seeded rows."""
    found: dict[str, list[tuple[str, ...]]] = {}
    params = {"schema": schema, "alembic": ALEMBIC_TABLE}
    for kind, query in QUERIES.items():
        rows = conn.execute(query, params).fetchall()
        found[kind] = sorted(_anonymous(row, schema) for row in rows)
    for table, columns in SEEDED.items():
        # Early revisions have fewer seeded tables; a missing one has no rows.
        exists = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".{table}']).fetchone()
        if exists is None or exists[0] is None:
            continue
        rows = conn.execute(f'SELECT {columns} FROM "{schema}".{table}').fetchall()
        found[f"rows of {table}"] = sorted(_anonymous(row, schema) for row in rows)
    return found


def _anonymous(row: tuple[Any, ...], schema: str) -> tuple[str, ...]:
    return tuple(str(value).replace(schema, "<schema>") for value in row)
