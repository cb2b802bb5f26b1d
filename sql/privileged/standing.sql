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
--               it, or owns the database (it configures every session and
--               owns what pg_database_owner owns), or PUBLIC where every role
--               may create in it. Whatever such a role planted there would
--               run with the login's rights. A superuser is privileged next
--               to any such role, PUBLIC included (where it may create in the
--               schema); another login, next to a role it is a member of (a
--               managed service's admin and the owner it made), and before
--               PostgreSQL 16 a CREATEROLE login next to any such role (it
--               may grant itself that role). Read
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
--   database_owner  the database's owner where the login can do more than it
--               (NULL elsewhere): for the words of a refusal
--   public_may_create  whether every role may create in the schema (schema
--               public before PostgreSQL 15): for the words of a refusal,
--               which then names the REVOKE that PostgreSQL 15 made the default
--
-- Every name is qualified, operators and types included, so that it reads the
-- same on any search_path: a client may send it before it pins its own.
WITH me AS (
    SELECT l.oid, l.rolname, l.rolsuper, l.rolcreaterole
      FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) AS a
      JOIN pg_catalog.pg_roles AS l ON l.oid OPERATOR(pg_catalog.=) a.usesysid
), here AS (
    SELECT d.oid, d.datdba
      FROM pg_catalog.pg_database AS d
     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()
), hub AS (
    SELECT n.oid, n.nspacl,
           -- pg_database_owner (schema public, from PostgreSQL 15): its one member.
           CASE WHEN n.nspowner OPERATOR(pg_catalog.=) 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT here.datdba FROM here) ELSE n.nspowner END AS owner
      FROM pg_catalog.pg_namespace AS n
     WHERE n.oid OPERATOR(pg_catalog.=) pg_catalog.to_regnamespace('__SCHEMA__')
), covered AS (
    -- The roles next to which this login would be privileged: each that is
    -- no superuser and not the login, where the login is a superuser or a
    -- member of it.
    SELECT r.oid
      FROM pg_catalog.pg_roles AS r, me
     WHERE NOT r.rolsuper
       AND r.oid OPERATOR(pg_catalog.<>) me.oid
       AND (me.rolsuper
            OR pg_catalog.pg_has_role(me.oid, r.oid, 'MEMBER')
            -- Before PostgreSQL 16, CREATEROLE may grant itself any role
            -- that is no superuser.
            OR (me.rolcreaterole
                AND pg_catalog.current_setting('server_version_num')::pg_catalog.int4
                    OPERATOR(pg_catalog.<) 160000))
), controlled AS (
    -- Whether such a role controls the hub: it owns the schema, or anything
    -- in it (found through the owner's dependencies, pg_shdepend, by role:
    -- an index scan, whatever the size of the catalogue), or PUBLIC may
    -- create in it and the login is a superuser.
    SELECT EXISTS (SELECT 1 FROM covered, hub WHERE covered.oid OPERATOR(pg_catalog.=) hub.owner)
        -- The database's owner configures every session that connects to it
        -- and owns what pg_database_owner owns (which pg_shdepend does not
        -- record): it controls every hub in the database.
        OR EXISTS (SELECT 1 FROM covered, here
                    WHERE covered.oid OPERATOR(pg_catalog.=) here.datdba)
        OR EXISTS (
            SELECT 1
              FROM covered
              JOIN pg_catalog.pg_shdepend AS d
                ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
               AND d.refobjid OPERATOR(pg_catalog.=) covered.oid
             CROSS JOIN hub
             WHERE d.deptype OPERATOR(pg_catalog.=) 'o'
               AND d.dbid OPERATOR(pg_catalog.=) (SELECT here.oid FROM here)
               AND CASE d.classid
                       WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_class AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.relnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_proc AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.pronamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_type AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.typnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_operator'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_operator AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.oprnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_opfamily'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_opfamily AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.opfnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_opclass'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_opclass AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.opcnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_collation'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_collation AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.collnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_conversion'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_conversion AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.connamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_ts_config'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_ts_config AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.cfgnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_ts_dict'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_ts_dict AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.dictnamespace OPERATOR(pg_catalog.=) hub.oid)
                       WHEN 'pg_catalog.pg_statistic_ext'::pg_catalog.regclass THEN EXISTS (
                           SELECT 1 FROM pg_catalog.pg_statistic_ext AS x
                            WHERE x.oid OPERATOR(pg_catalog.=) d.objid
                              AND x.stxnamespace OPERATOR(pg_catalog.=) hub.oid)
                       ELSE false
                   END)
        OR EXISTS (SELECT 1 FROM hub, me, pg_catalog.aclexplode(hub.nspacl) AS a
                    WHERE me.rolsuper
                      AND a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
                      AND a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid) AS any
), owner AS (
    SELECT CASE WHEN x.role OPERATOR(pg_catalog.=) 'pg_database_owner'::pg_catalog.regrole
                THEN (SELECT here.datdba FROM here) ELSE x.role END AS oid
      -- By name in the schema's oid, never to_regclass: that one needs USAGE
      -- on the schema, which a managed admin lacks from PostgreSQL 16.
      FROM (SELECT coalesce(
                       (SELECT c.relowner FROM pg_catalog.pg_class AS c, hub
                         WHERE c.relnamespace OPERATOR(pg_catalog.=) hub.oid
                           AND c.relname OPERATOR(pg_catalog.=) 'taskhub_pg_alembic_version'),
                       (SELECT c.relowner FROM pg_catalog.pg_class AS c, hub
                         WHERE c.relnamespace OPERATOR(pg_catalog.=) hub.oid
                           AND c.relname OPERATOR(pg_catalog.=) 'instances'),
                       (SELECT hub.owner FROM hub)) AS role) AS x
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
       EXISTS (SELECT 1 FROM hub) AND (SELECT controlled.any FROM controlled) AS privileged,
       (SELECT coalesce(pg_catalog.array_agg(a.setting ORDER BY a.setting),
                        '{}'::pg_catalog.text[])
          FROM applying AS a) AS settings,
       (SELECT r.rolname::pg_catalog.text FROM covered, here, pg_catalog.pg_roles AS r
         WHERE covered.oid OPERATOR(pg_catalog.=) here.datdba
           AND r.oid OPERATOR(pg_catalog.=) here.datdba) AS database_owner,
       EXISTS (SELECT 1 FROM hub, pg_catalog.aclexplode(hub.nspacl) AS a
                WHERE a.privilege_type OPERATOR(pg_catalog.=) 'CREATE'
                  AND a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid) AS public_may_create
  FROM me
