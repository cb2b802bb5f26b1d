-- The first statements of the DDL guard's script on a Citus worker
-- (provider/deploy/ddl_guard.py, worker_script), run as the installing role
-- on a session of the worker's own, which the checks of the coordinator do
-- not see: its search_path pinned first (a qualified call, literals only),
-- then a refusal, before anything else runs, of a session that acts as
-- another role than it logged in as (a setting of the worker's database or
-- role can make it), or on which a database or role setting applies that a
-- role other than a superuser may have made there.
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
DO $worker_session$
BEGIN
    IF current_user OPERATOR(pg_catalog.<>) session_user THEN
        RAISE EXCEPTION 'refused: on this worker the session logged in as % acts as %',
            session_user, current_user;
    END IF;
    IF EXISTS (
        WITH me AS (
            SELECT r.oid FROM pg_catalog.pg_roles AS r
             WHERE r.rolname OPERATOR(pg_catalog.=) session_user
        )
        SELECT 1
          FROM pg_catalog.pg_db_role_setting AS s
         CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS c(setting)
          LEFT JOIN pg_catalog.pg_settings AS known
            ON known.name OPERATOR(pg_catalog.=)
               pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1))
         WHERE ((s.setdatabase OPERATOR(pg_catalog.=)
                     (SELECT d.oid FROM pg_catalog.pg_database AS d
                       WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
                 AND (s.setrole OPERATOR(pg_catalog.=) 0
                      OR s.setrole OPERATOR(pg_catalog.=) (SELECT me.oid FROM me)))
                OR (s.setdatabase OPERATOR(pg_catalog.=) 0
                    AND s.setrole OPERATOR(pg_catalog.=) (SELECT me.oid FROM me)))
           AND pg_catalog.lower(pg_catalog.split_part(c.setting, '=', 1))
                   OPERATOR(pg_catalog.<>) 'search_path'
           AND (known.context IS NULL OR known.context OPERATOR(pg_catalog.=) 'user')
    ) THEN
        RAISE EXCEPTION 'refused: on this worker a database or role setting applies to the session that a role other than a superuser may have made';
    END IF;
END
$worker_session$;
