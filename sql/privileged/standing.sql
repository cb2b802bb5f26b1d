-- Who this session is, next to the hub in __SCHEMA__: one row, read from the
-- catalogue alone (no function, view or table of the hub's is touched).
--
--   login       the role the session logged in as (pg_stat_activity keeps it:
--               SET ROLE and SET SESSION AUTHORIZATION do not change it)
--   acting_as   current_user: another role than login when a setting or a
--               SET ROLE made the session act as it
--   owner       the hub's owner: its version table's, else its instances',
--               else the schema's (NULL: there is no such schema); where
--               that is pg_database_owner (schema public, from PostgreSQL 15),
--               the database's owner, its one member
--   privileged  the login can do more than that owner: a superuser, or
--               another member of the owner's role (a managed service's
--               admin that created it), while the owner is no superuser. Code
--               the owner may change would run with those rights.
--   settings    the database and role settings that apply to this session
--               (pg_db_role_setting) and that a role other than a superuser
--               may have made, as 'scope: name=value': those of parameters
--               any role may set (the owner of the database may put them on
--               it), and those the server does not know (a placeholder).
--               search_path is left out: the session sets its own at startup.
--               A parameter only a superuser may set (session_preload_libraries,
--               say) was set by one, or by a role a superuser let.
--
-- It runs after the session pinned search_path to pg_catalog, pg_temp
-- (provider/deploy/privileged_session.py), so no name here can resolve to
-- an object a lesser role created; the functions are qualified all the same.
WITH me AS (
    SELECT a.usesysid AS login
      FROM pg_catalog.pg_stat_activity AS a
     WHERE a.pid = pg_catalog.pg_backend_pid()
), hub AS (
    SELECT coalesce(
               (SELECT c.relowner FROM pg_catalog.pg_class AS c
                 WHERE c.oid = pg_catalog.to_regclass('__SCHEMA__.taskhub_pg_alembic_version')),
               (SELECT c.relowner FROM pg_catalog.pg_class AS c
                 WHERE c.oid = pg_catalog.to_regclass('__SCHEMA__.instances')),
               (SELECT n.nspowner FROM pg_catalog.pg_namespace AS n
                 WHERE n.oid = pg_catalog.to_regnamespace('__SCHEMA__'))) AS owner
), owner AS (
    SELECT CASE WHEN hub.owner = 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT d.datdba FROM pg_catalog.pg_database AS d
                       WHERE d.datname = pg_catalog.current_database())
                ELSE hub.owner END AS oid
      FROM hub
), applying AS (
    -- What PostgreSQL applied at login: the database's settings, the login's
    -- in this database, and the login's everywhere.
    SELECT CASE WHEN s.setrole = 0 THEN 'database ' || pg_catalog.current_database()
                WHEN s.setdatabase = 0 THEN 'role ' || l.rolname
                ELSE 'role ' || l.rolname || ' in database ' || pg_catalog.current_database()
           END || ': ' || c.setting AS setting
      FROM me
      JOIN pg_catalog.pg_roles AS l ON l.oid = me.login
      JOIN pg_catalog.pg_db_role_setting AS s
        ON (s.setdatabase = (SELECT d.oid FROM pg_catalog.pg_database AS d
                              WHERE d.datname = pg_catalog.current_database())
            AND s.setrole IN (0, l.oid))
        OR (s.setdatabase = 0 AND s.setrole = l.oid)
     CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS c(setting)
      LEFT JOIN pg_catalog.pg_settings AS known
        ON known.name = pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1))
     WHERE pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1)) <> 'search_path'
       AND (known.context IS NULL OR known.context = 'user')
)
SELECT l.rolname::text AS login,
       current_user::text AS acting_as,
       o.rolname::text AS owner,
       coalesce(NOT o.rolsuper
                AND o.oid <> l.oid
                AND (l.rolsuper OR pg_catalog.pg_has_role(l.oid, o.oid, 'MEMBER')),
                false) AS privileged,
       (SELECT coalesce(pg_catalog.array_agg(a.setting ORDER BY a.setting), '{}')
          FROM applying AS a) AS settings
  FROM me
  JOIN pg_catalog.pg_roles AS l ON l.oid = me.login
 CROSS JOIN owner
  LEFT JOIN pg_catalog.pg_roles AS o ON o.oid = owner.oid
