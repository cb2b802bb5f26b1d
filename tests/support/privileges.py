"""What a role holds in a database, as the catalogue says, and what a hub
says its operator roles are granted: to compare the two."""

from __future__ import annotations

from typing import Any

import psycopg

# Everything a role can hold in a database, as (privilege, object): held
# through any grant (its own, PUBLIC's, a role it is a member of), on the
# hub's schema and everything in it (a column only where its table's
# privilege does not already cover it), and granted to it directly anywhere
# else in the database. "<schema>" stands for the hub's schema.
HELD = """
WITH hub AS (SELECT %(schema)s::regnamespace AS oid),
     me AS (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = %(role)s)
SELECT p, '<schema>' FROM hub, unnest(ARRAY['USAGE', 'CREATE']) AS p
 WHERE has_schema_privilege(%(role)s, hub.oid, p)
UNION ALL
SELECT p, c.relname FROM pg_class AS c, hub,
       unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES',
                    'TRIGGER']) AS p
 WHERE c.relnamespace = hub.oid AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
   AND has_table_privilege(%(role)s, c.oid, p)
UNION ALL
SELECT p, c.relname FROM pg_class AS c, hub, unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) AS p
 WHERE c.relnamespace = hub.oid AND c.relkind = 'S' AND has_sequence_privilege(%(role)s, c.oid, p)
UNION ALL
SELECT p, c.relname || '.' || a.attname
  FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid, hub,
       unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'REFERENCES']) AS p
 WHERE c.relnamespace = hub.oid AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
   AND a.attnum > 0 AND NOT a.attisdropped
   AND has_column_privilege(%(role)s, c.oid, a.attnum, p)
   AND NOT has_table_privilege(%(role)s, c.oid, p)
UNION ALL
SELECT 'EXECUTE', f.proname FROM pg_proc AS f, hub
 WHERE f.pronamespace = hub.oid AND has_function_privilege(%(role)s, f.oid, 'EXECUTE')
UNION ALL
SELECT a.privilege_type, 'elsewhere: ' || c.oid::regclass::text
  FROM pg_class AS c, hub, me, aclexplode(c.relacl) AS a
 WHERE c.relnamespace <> hub.oid AND a.grantee = me.oid
UNION ALL
SELECT a.privilege_type, 'elsewhere: column ' || c.oid::regclass::text || '.' || t.attname
  FROM pg_attribute AS t JOIN pg_class AS c ON c.oid = t.attrelid, hub, me,
       aclexplode(t.attacl) AS a
 WHERE c.relnamespace <> hub.oid AND a.grantee = me.oid
UNION ALL
SELECT a.privilege_type, 'elsewhere: function ' || f.oid::regprocedure::text
  FROM pg_proc AS f, hub, me, aclexplode(f.proacl) AS a
 WHERE f.pronamespace <> hub.oid AND a.grantee = me.oid
UNION ALL
SELECT a.privilege_type, 'elsewhere: schema ' || n.nspname
  FROM pg_namespace AS n, hub, me, aclexplode(n.nspacl) AS a
 WHERE n.oid <> hub.oid AND a.grantee = me.oid
UNION ALL
SELECT a.privilege_type, 'database ' || d.datname
  FROM pg_database AS d, me, aclexplode(d.datacl) AS a
 WHERE d.datname = current_database() AND a.grantee = me.oid
"""


def held(conn: psycopg.Connection[Any], role: str, schema: str) -> set[tuple[str, str]]:
    rows = conn.execute(HELD, {"role": role, "schema": f'"{schema}"'}).fetchall()
    return {(str(privilege), str(name)) for privilege, name in rows}


def listed(conn: psycopg.Connection[Any], schema: str) -> set[tuple[str, str]]:
    """What taskhub_operator_privileges says an operator is granted (with the schema's USAGE)."""
    rows = conn.execute(
        f'SELECT privilege, object_name, columns FROM "{schema}".taskhub_operator_privileges'
    ).fetchall()
    found = {("USAGE", "<schema>")}
    for privilege, name, columns in rows:
        found |= {(privilege, f"{name}.{column}") for column in columns or []} or {
            (privilege, name)
        }
    return found
