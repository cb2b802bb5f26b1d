-- The hub's own DDL guard, as revisions 0005-0028 made it: an event trigger
-- per hub (taskhub_ddl_guard_<md5 of the schema name>) running the function
-- <schema>.taskhub_refuse_runtime_ddl(), whose list of roles is a setting
-- of that function, or its comment. One row when it is there: its name, its
-- function, whether a role this session trusts (a superuser, or the
-- session's login) owns both, and the roles it lists. A privileged step
-- moves it into the database's guard (provider/deploy/ddl_guard.py).
SELECT e.evtname::text AS name,
       p.oid::regprocedure::text AS function,
       (fo.rolsuper OR fo.oid = login.oid) AND (eo.rolsuper OR eo.oid = login.oid) AS trusted,
       coalesce(
           (SELECT pg_catalog.substr(c.setting, pg_catalog.length('taskhub.guarded_roles=') + 1)
              FROM pg_catalog.unnest(p.proconfig) AS c(setting)
             WHERE c.setting LIKE 'taskhub.guarded_roles=%'),
           (SELECT pg_catalog.substr(d.description, pg_catalog.length('taskhub.guarded_roles=') + 1)
              FROM pg_catalog.pg_description AS d
             WHERE d.classoid = 'pg_catalog.pg_proc'::regclass AND d.objoid = p.oid
               AND d.objsubid = 0 AND d.description LIKE 'taskhub.guarded_roles=%'),
           '{}')::text[] AS roles
  FROM pg_catalog.pg_event_trigger AS e
  JOIN pg_catalog.pg_proc AS p ON p.oid = e.evtfoid
  JOIN pg_catalog.pg_roles AS fo ON fo.oid = p.proowner
  JOIN pg_catalog.pg_roles AS eo ON eo.oid = e.evtowner
 CROSS JOIN (SELECT a.usesysid AS oid
               FROM pg_catalog.pg_stat_activity AS a
              WHERE a.pid = pg_catalog.pg_backend_pid()) AS login
 WHERE e.evtname = 'taskhub_ddl_guard_' || pg_catalog.left(pg_catalog.md5('__SCHEMA_NAME__'), 16)
   AND p.pronamespace = pg_catalog.to_regnamespace('__SCHEMA__')
