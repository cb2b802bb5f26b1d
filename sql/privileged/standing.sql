-- Who this session is, next to the hub in __SCHEMA__: one row, read from the
-- catalogue alone (no function, view or table of the hub's is touched).
--
--   login       the role the session logged in as (pg_stat_activity keeps it:
--               SET ROLE and SET SESSION AUTHORIZATION do not change it)
--   acting_as   current_user: another role than login when a setting or a
--               SET ROLE made the session act as it
--   owner       the hub's owner, for the words of a refusal: its version
--               table's, else its instances', else the schema's; where that
--               is pg_database_owner (schema public, from PostgreSQL 15), the
--               database's owner, its one member (NULL: no such schema)
--   hub_exists  whether the schema is there
--   may_gain    whether the login could be privileged next to some hub: a
--               superuser, a role with CREATEROLE, or a member of another
--               role (a client refuses such a login where the schema is not
--               there when it looks, rather than trust the look)
--   privileged  the login can do more than some role that controls the hub:
--               one that is no superuser and owns the schema or anything in
--               it, or PUBLIC where every role may create in it. Whatever
--               such a role planted there
--               would run with the login's rights. A superuser is privileged
--               next to any such role, PUBLIC included (where it may create
--               in the schema); another login, next to a role it is a member
--               of (a managed service's admin and the owner it made). Read
--               from the schema's objects, not from a name the owner can
--               change: renaming the hub's tables changes nothing here.
--   settings    the database and role settings that apply to this session
--               (pg_db_role_setting) and that a role other than a superuser
--               may have made, as 'scope: name=value': those of parameters
--               any role may set (the owner of the database may put them on
--               it), and those the server does not know (a placeholder).
--               search_path is left out: the session sets its own at startup.
--               A parameter only a superuser may set (session_preload_libraries,
--               say) was set by one, or by a role a superuser let.
--
-- Every name is qualified, operators and types included, so that it reads the
-- same on any search_path: a client may send it before it pins its own.
WITH me AS (
    SELECT l.oid, l.rolname, l.rolsuper, l.rolcreaterole
      FROM pg_catalog.pg_stat_activity AS a
      JOIN pg_catalog.pg_roles AS l ON l.oid OPERATOR(pg_catalog.=) a.usesysid
     WHERE a.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
), here AS (
    SELECT d.oid, d.datdba
      FROM pg_catalog.pg_database AS d
     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
), hub AS (
    SELECT n.oid, n.nspowner, n.nspacl
      FROM pg_catalog.pg_namespace AS n
     WHERE n.oid OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('__SCHEMA__')
), controllers AS (
    -- Every role that owns the schema or something in it, and PUBLIC (0)
    -- where every role may create in it (schema public before PostgreSQL
    -- 15), pg_database_owner taken for the database's owner. A role granted
    -- CREATE on the schema by name is not one until it owns something there
    -- (a guarded runtime role holds CREATE, and the guard refuses its DDL).
    SELECT CASE WHEN o.role OPERATOR(pg_catalog.=) 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT here.datdba FROM here) ELSE o.role END AS role
      FROM (SELECT hub.nspowner AS role FROM hub
            UNION
            SELECT c.relowner FROM pg_catalog.pg_class AS c, hub
             WHERE c.relnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT p.proowner FROM pg_catalog.pg_proc AS p, hub
             WHERE p.pronamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT t.typowner FROM pg_catalog.pg_type AS t, hub
             WHERE t.typnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT o.oprowner FROM pg_catalog.pg_operator AS o, hub
             WHERE o.oprnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT f.opfowner FROM pg_catalog.pg_opfamily AS f, hub
             WHERE f.opfnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT k.opcowner FROM pg_catalog.pg_opclass AS k, hub
             WHERE k.opcnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT cl.collowner FROM pg_catalog.pg_collation AS cl, hub
             WHERE cl.collnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT cv.conowner FROM pg_catalog.pg_conversion AS cv, hub
             WHERE cv.connamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT tc.cfgowner FROM pg_catalog.pg_ts_config AS tc, hub
             WHERE tc.cfgnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT td.dictowner FROM pg_catalog.pg_ts_dict AS td, hub
             WHERE td.dictnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT x.stxowner FROM pg_catalog.pg_statistic_ext AS x, hub
             WHERE x.stxnamespace OPERATOR(pg_catalog.=) hub.oid
            UNION
            SELECT a.grantee FROM hub, pg_catalog.aclexplode(hub.nspacl) AS a
             WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
               AND a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid) AS o
), lesser AS (
    -- The controllers that are no superuser, and not the login itself.
    SELECT c.role, r.oid IS NULL AS public
      FROM controllers AS c
      LEFT JOIN pg_catalog.pg_roles AS r ON r.oid OPERATOR(pg_catalog.=) c.role
     WHERE r.oid IS NULL
        OR (NOT r.rolsuper AND r.oid OPERATOR(pg_catalog.<>) (SELECT me.oid FROM me))
), owner AS (
    SELECT CASE WHEN x.role OPERATOR(pg_catalog.=) 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT here.datdba FROM here) ELSE x.role END AS oid
      FROM (SELECT coalesce(
                       (SELECT c.relowner FROM pg_catalog.pg_class AS c
                         WHERE c.oid OPERATOR(pg_catalog.=)
                               pg_catalog.to_regclass('__SCHEMA__.taskhub_pg_alembic_version')),
                       (SELECT c.relowner FROM pg_catalog.pg_class AS c
                         WHERE c.oid OPERATOR(pg_catalog.=)
                               pg_catalog.to_regclass('__SCHEMA__.instances')),
                       (SELECT hub.nspowner FROM hub)) AS role) AS x
), applying AS (
    -- What PostgreSQL applied at login: the database's settings, the login's
    -- in this database, and the login's everywhere.
    SELECT CASE WHEN s.setrole OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                THEN 'database ' OPERATOR(pg_catalog.||) pg_catalog.current_database()
                WHEN s.setdatabase OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                THEN 'role ' OPERATOR(pg_catalog.||) me.rolname::pg_catalog.text
                ELSE 'role ' OPERATOR(pg_catalog.||) me.rolname::pg_catalog.text
                     OPERATOR(pg_catalog.||) ' in database '
                     OPERATOR(pg_catalog.||) pg_catalog.current_database()
           END OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) c.setting AS setting
      FROM me
      JOIN pg_catalog.pg_db_role_setting AS s
        ON (s.setdatabase OPERATOR(pg_catalog.=) (SELECT here.oid FROM here)
            AND (s.setrole OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                 OR s.setrole OPERATOR(pg_catalog.=) me.oid))
        OR (s.setdatabase OPERATOR(pg_catalog.=) 0::pg_catalog.oid
            AND s.setrole OPERATOR(pg_catalog.=) me.oid)
     CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS c(setting)
      LEFT JOIN pg_catalog.pg_settings AS known
        ON known.name OPERATOR(pg_catalog.=)
           pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1))
     WHERE pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1))
               OPERATOR(pg_catalog.<>) 'search_path'
       AND (known.context IS NULL OR known.context OPERATOR(pg_catalog.=) 'user')
)
SELECT me.rolname::pg_catalog.text AS login,
       current_user::pg_catalog.text AS acting_as,
       (SELECT r.rolname::pg_catalog.text FROM owner, pg_catalog.pg_roles AS r
         WHERE r.oid OPERATOR(pg_catalog.=) owner.oid) AS owner,
       EXISTS (SELECT 1 FROM hub) AS hub_exists,
       me.rolsuper OR me.rolcreaterole
           OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS m
                       WHERE m.member OPERATOR(pg_catalog.=) me.oid) AS may_gain,
       EXISTS (SELECT 1
                 FROM lesser AS l
                WHERE me.rolsuper
                   OR (NOT l.public AND pg_catalog.pg_has_role(me.oid, l.role, 'MEMBER')))
           AS privileged,
       (SELECT coalesce(pg_catalog.array_agg(a.setting ORDER BY a.setting),
                        '{}'::pg_catalog.text[])
          FROM applying AS a) AS settings
  FROM me
