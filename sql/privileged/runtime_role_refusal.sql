-- Why %(role)s cannot be a guarded runtime role of the hub in __SCHEMA__, as
-- a privileged step sees it from the catalogue alone: no row when it can.
-- The hub's owner asks the same of its own grant (taskhub_grant_runtime_role),
-- which also refuses a role that shares rights with the owner.
WITH target AS (
    SELECT r.* FROM pg_catalog.pg_roles AS r WHERE r.rolname = %(role)s
), hub AS (
    SELECT coalesce(
               -- By name, never to_regclass: that one needs USAGE on the
               -- schema, which a managed admin lacks from PostgreSQL 16.
               (SELECT c.relowner FROM pg_catalog.pg_class AS c
                 WHERE c.relnamespace = pg_catalog.to_regnamespace('__SCHEMA__')
                   AND c.relname = 'taskhub_pg_alembic_version'),
               (SELECT n.nspowner FROM pg_catalog.pg_namespace AS n
                 WHERE n.oid = pg_catalog.to_regnamespace('__SCHEMA__'))) AS owner
), owner AS (
    -- pg_database_owner (schema public, from PostgreSQL 15): its one member.
    SELECT CASE WHEN hub.owner = 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT d.datdba FROM pg_catalog.pg_database AS d
                       WHERE d.datname = pg_catalog.current_database())
                ELSE hub.owner END AS oid
      FROM hub
), login AS (
    SELECT a.usesysid AS oid
      FROM pg_catalog.pg_stat_activity AS a
     WHERE a.pid = pg_catalog.pg_backend_pid()
), refusals AS (
    SELECT 1 AS rank, 'role ' || %(role)s || ' does not exist' AS refusal
     WHERE NOT EXISTS (SELECT 1 FROM target)
    UNION ALL
    SELECT 2, 'role ' || t.rolname || ' is a superuser: it cannot be limited to what the runtime needs'
      FROM target AS t WHERE t.rolsuper
    UNION ALL
    SELECT 3, 'role ' || t.rolname || ' is a member of pg_write_all_data: it cannot be limited to'
              ' what the runtime needs'
      FROM target AS t
     WHERE pg_catalog.pg_has_role(t.oid, 'pg_write_all_data', 'MEMBER')
    UNION ALL
    -- What a role can use or become, either way, with the hub's owner or
    -- this session's login: the runtime would hold their rights.
    SELECT 4, 'role ' || t.rolname || ' shares its rights with role ' || other.rolname
              || ': use a separate role for the runtime'
      FROM target AS t
      JOIN pg_catalog.pg_roles AS other
        ON other.oid IN ((SELECT owner.oid FROM owner), (SELECT login.oid FROM login))
     CROSS JOIN (SELECT CASE WHEN pg_catalog.current_setting('server_version_num')::integer >= 160000
                             THEN 'SET' ELSE 'MEMBER' END AS become) AS v
     WHERE t.oid = other.oid
        OR pg_catalog.pg_has_role(t.oid, other.oid, 'USAGE')
        OR pg_catalog.pg_has_role(t.oid, other.oid, v.become)
        OR (NOT other.rolsuper
            AND (pg_catalog.pg_has_role(other.oid, t.oid, 'USAGE')
                 OR pg_catalog.pg_has_role(other.oid, t.oid, v.become)))
    UNION ALL
    SELECT 5, 'role ' || t.rolname || ' owns ' || o.what || ' (and maybe more) in schema '
              || '__SCHEMA_NAME__' || ', so it cannot be limited'
      FROM target AS t
     CROSS JOIN LATERAL (
            SELECT 'the schema' AS what FROM pg_catalog.pg_namespace AS n
             WHERE n.oid = pg_catalog.to_regnamespace('__SCHEMA__') AND n.nspowner = t.oid
            UNION ALL
            SELECT 'relation ' || c.relname FROM pg_catalog.pg_class AS c
             WHERE c.relnamespace = pg_catalog.to_regnamespace('__SCHEMA__') AND c.relowner = t.oid
            UNION ALL
            SELECT 'function ' || p.proname FROM pg_catalog.pg_proc AS p
             WHERE p.pronamespace = pg_catalog.to_regnamespace('__SCHEMA__') AND p.proowner = t.oid
            LIMIT 1) AS o
)
SELECT r.refusal FROM refusals AS r ORDER BY r.rank LIMIT 1
