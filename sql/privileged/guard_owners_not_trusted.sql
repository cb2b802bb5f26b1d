-- The objects of the database's DDL guard (schema taskhub_guard, its
-- relations, types, functions and operators, the event trigger
-- taskhub_runtime_ddl_guard) that belong to a role this session cannot
-- trust, and the roles besides their owner that may create in that schema:
-- a role that is neither a superuser nor the session's login. A step writes
-- the guard's list and creates its trigger only when this is empty (checked
-- after the guard's CREATE ... IF NOT EXISTS, in the same transaction: what
-- a trusted role owns, no lesser role can change before the commit).
WITH login AS (
    SELECT a.usesysid AS oid
      FROM pg_catalog.pg_stat_activity AS a
     WHERE a.pid = pg_catalog.pg_backend_pid()
), guard AS (
    SELECT n.oid, n.nspowner, n.nspacl
      FROM pg_catalog.pg_namespace AS n
     WHERE n.nspname = 'taskhub_guard'
), owned AS (
    SELECT 'schema taskhub_guard' AS what, g.nspowner AS owner FROM guard AS g
    UNION ALL
    SELECT 'relation ' || c.oid::regclass::text, c.relowner
      FROM pg_catalog.pg_class AS c JOIN guard AS g ON c.relnamespace = g.oid
    UNION ALL
    SELECT 'type ' || t.oid::regtype::text, t.typowner
      FROM pg_catalog.pg_type AS t JOIN guard AS g ON t.typnamespace = g.oid
    UNION ALL
    SELECT 'function ' || p.oid::regprocedure::text, p.proowner
      FROM pg_catalog.pg_proc AS p JOIN guard AS g ON p.pronamespace = g.oid
    UNION ALL
    SELECT 'operator ' || o.oid::regoperator::text, o.oprowner
      FROM pg_catalog.pg_operator AS o JOIN guard AS g ON o.oprnamespace = g.oid
    UNION ALL
    SELECT 'event trigger ' || e.evtname, e.evtowner
      FROM pg_catalog.pg_event_trigger AS e
     WHERE e.evtname = 'taskhub_runtime_ddl_guard'
    UNION ALL
    SELECT 'the right to create in schema taskhub_guard', a.grantee
      FROM guard AS g CROSS JOIN LATERAL pg_catalog.aclexplode(g.nspacl) AS a
     WHERE a.privilege_type = 'CREATE' AND a.grantee <> g.nspowner
)
SELECT o.what, coalesce(r.rolname::text, 'PUBLIC') AS role
  FROM owned AS o
  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = o.owner
 WHERE r.oid IS NULL
    OR (NOT r.rolsuper AND r.oid <> (SELECT login.oid FROM login))
 ORDER BY 1
