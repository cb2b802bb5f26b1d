-- Every refusal of a migration's grant of runtime role __ROLE__ (mode
-- __RUNTIME_DDL__), checked before any revision runs: each revision commits
-- on its own, and a run refused only at its grant would leave them applied.
-- The same tests as taskhub_grant_runtime_role (whose words it uses), on the
-- catalogue alone: the hub may not exist yet. A guarded role needs the
-- database's DDL guard to name it for this hub (provider/deploy/ddl_guard.py),
-- or a run that may install the guard itself (__MAY_INSTALL_GUARD__: online,
-- as a role that may create an event trigger).
DO $precheck$
DECLARE
    v_role    pg_catalog.pg_roles;
    v_owned   text;
    v_can     boolean := false;
    v_guarded boolean := false;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    SELECT * INTO v_role FROM pg_roles AS r WHERE r.rolname = '__ROLE__';
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role "__ROLE__" does not exist' USING ERRCODE = '42704';
    END IF;
    IF v_role.rolsuper THEN
        RAISE EXCEPTION 'role __ROLE__ is a superuser: it cannot be limited to what the runtime needs'
              USING ERRCODE = '22023';
    END IF;
    IF pg_has_role(v_role.oid, 'pg_write_all_data', 'MEMBER') THEN
        RAISE EXCEPTION 'role __ROLE__ is a member of pg_write_all_data: it cannot be limited to '
                        'what the runtime needs' USING ERRCODE = '22023';
    END IF;
    -- What a role can use or become (taskhub_shares_rights), not any membership.
    IF '__ROLE__' = current_user
       OR pg_has_role(v_role.oid, current_user, 'USAGE')
       OR pg_has_role(v_role.oid, current_user,
                      CASE WHEN current_setting('server_version_num')::integer >= 160000
                           THEN 'SET' ELSE 'MEMBER' END)
       OR (NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
           AND (pg_has_role(current_user, v_role.oid, 'USAGE')
                OR pg_has_role(current_user, v_role.oid,
                               CASE WHEN current_setting('server_version_num')::integer >= 160000
                                    THEN 'SET' ELSE 'MEMBER' END)))
    THEN
        RAISE EXCEPTION 'role __ROLE__ shares its rights with the migrating role %: use a separate '
                        'role for the runtime', current_user USING ERRCODE = '22023';
    END IF;
    SELECT o.what INTO v_owned
      FROM (SELECT 'schema ' || n.nspname AS what FROM pg_namespace AS n
             WHERE n.oid = to_regnamespace('__SCHEMA__') AND n.nspowner = v_role.oid
            UNION ALL
            SELECT 'relation ' || c.oid::regclass::text FROM pg_class AS c
             WHERE c.relnamespace = to_regnamespace('__SCHEMA__') AND c.relowner = v_role.oid
            UNION ALL
            SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc AS p
             WHERE p.pronamespace = to_regnamespace('__SCHEMA__') AND p.proowner = v_role.oid) AS o
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'role __ROLE__ owns % (and maybe more) in this schema, so it cannot be '
                        'limited', v_owned USING ERRCODE = '22023';
    END IF;
    IF '__RUNTIME_DDL__' <> 'guarded' THEN
        RETURN;
    END IF;
    -- Named by the database's guard, or by this hub's own (revisions 0005-0028).
    IF to_regclass('taskhub_guard.guarded_roles') IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_event_trigger AS e
                    WHERE e.evtname = 'taskhub_runtime_ddl_guard' AND e.evtenabled <> 'D')
    THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM taskhub_guard.guarded_roles'
                '                WHERE hub_schema = $1 AND role_name = $2)'
           INTO v_guarded USING '__SCHEMA_NAME__', '__ROLE__';
    END IF;
    IF NOT v_guarded THEN
        SELECT '__ROLE__' = ANY (coalesce(
                   (SELECT substr(c.setting, length('taskhub.guarded_roles=') + 1)
                      FROM unnest(p.proconfig) AS c(setting)
                     WHERE c.setting LIKE 'taskhub.guarded_roles=%'),
                   (SELECT substr(d.description, length('taskhub.guarded_roles=') + 1)
                      FROM pg_description AS d
                     WHERE d.classoid = 'pg_proc'::regclass AND d.objoid = p.oid
                       AND d.objsubid = 0 AND d.description LIKE 'taskhub.guarded_roles=%'),
                   '{}')::text[])
          INTO v_guarded
          FROM pg_event_trigger AS e
          JOIN pg_proc AS p ON p.oid = e.evtfoid
         WHERE e.evtname = 'taskhub_ddl_guard_' || left(md5('__SCHEMA_NAME__'), 16)
           AND e.evtenabled <> 'D';
        v_guarded := coalesce(v_guarded, false);
    END IF;
    IF NOT v_guarded AND __MAY_INSTALL_GUARD__ THEN
        -- Tried, not guessed from role names, and rolled back.
        BEGIN
            CREATE FUNCTION pg_temp.taskhub_event_trigger_probe() RETURNS event_trigger
                LANGUAGE plpgsql AS $probe$ BEGIN END $probe$;
            CREATE EVENT TRIGGER taskhub_event_trigger_probe ON ddl_command_end
                EXECUTE FUNCTION pg_temp.taskhub_event_trigger_probe();
            RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'taskhub-pg: probe rolled back';
        EXCEPTION
            WHEN insufficient_privilege THEN
                v_can := false;
            WHEN raise_exception THEN
                v_can := true;
        END;
    END IF;
    IF NOT (v_guarded OR v_can) THEN
        RAISE EXCEPTION 'runtime_ddl ''guarded'' needs the DDL guard to name role __ROLE__, and '
                        'role % cannot install it (an event trigger)', current_user
              USING ERRCODE = '42501',
                    HINT = 'A role that can (a superuser, or the admin of a managed service that '
                           'allows event triggers) runs taskhub-pg grant-runtime-role __ROLE__ '
                           '--schema __SCHEMA_NAME__ first; or pass runtime_ddl=none (no CREATE: '
                           'the taskhub provider and the duroxide 0.2.2 runtime both run on a hub '
                           'that exists).';
    END IF;
END
$precheck$
