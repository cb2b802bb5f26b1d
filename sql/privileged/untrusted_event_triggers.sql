-- The enabled event triggers whose function a role other than a superuser or
-- this session's login owns, with how each is enabled. An event trigger runs
-- its function as whoever runs DDL (a GRANT too), so before a privileged
-- step's first such statement each of these is turned off for the step's
-- transaction, and on again before it commits (or the step is refused where
-- the session may not: provider/deploy/privileged_session.py).
SELECT e.evtname::text AS name,
       e.evtenabled::text AS enabled,
       p.oid::regprocedure::text AS function,
       fo.rolname::text AS function_owner
  FROM pg_catalog.pg_event_trigger AS e
  JOIN pg_catalog.pg_proc AS p ON p.oid = e.evtfoid
  JOIN pg_catalog.pg_roles AS fo ON fo.oid = p.proowner
 WHERE e.evtenabled <> 'D'
   AND NOT fo.rolsuper
   AND fo.oid <> (SELECT a.usesysid FROM pg_catalog.pg_stat_activity AS a
                   WHERE a.pid = pg_catalog.pg_backend_pid())
 ORDER BY e.evtname
