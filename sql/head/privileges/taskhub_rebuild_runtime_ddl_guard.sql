-- Point the guard at the guarded roles, with p_add added and p_remove taken
-- out; drop it when there are none. The list is the guard's own (a setting
-- of its function, or where the role that makes the guard may not put one,
-- its comment: taskhub_guard_roles_of), which only that role can change,
-- never a table the schema's owner can write: a row that owner planted
-- cannot make a superuser's grant guard, and lock out of DDL, a role it did
-- not name. Changing the guard needs a role that may create event triggers
-- (a superuser, or a managed service's admin); a run that changes nothing
-- (the owner's next migration, say) touches nothing, so it needs neither.
-- The guard's list of roles is a grant's doing, not drift: the deploy gate's
-- record of the guard follows it (its other SET clauses stay as recorded, so
-- a hand edit of them is still named by taskhub_check_drift).
--
-- On a hub distributed by Citus the guard is put on every worker as well
-- (an event trigger is a node's own; Citus carries the function and its
-- roles, not the trigger): a runtime role connected to the hub's node, or
-- moved there with the hub, meets the same refusal. A worker added later gets
-- it at the next rebuild (taskhub_distribute_on_citus runs one).
CREATE FUNCTION __SCHEMA__.taskhub_rebuild_runtime_ddl_guard(
    p_add text DEFAULT NULL, p_remove text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_trigger  text := __SCHEMA__.taskhub_runtime_ddl_guard_name();
    v_function regprocedure := '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure;
    v_roles    text[];
    v_current  text[] := __SCHEMA__.taskhub_guard_roles_of(
                             '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure);
    v_setting  boolean;
    v_distributed boolean := false;
    v_command  text;
    v_node     record;
BEGIN
    v_setting := EXISTS (SELECT 1
                           FROM pg_proc AS p
                          CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
                          WHERE p.oid = v_function AND c.setting LIKE 'taskhub.guarded_roles=%');
    -- The roles it guards now that still exist, with the change asked for.
    SELECT coalesce(array_agg(DISTINCT g.role_name ORDER BY g.role_name), '{}') INTO v_roles
      FROM (SELECT listed.role_name
              FROM unnest(v_current) AS listed(role_name)
             UNION ALL
            SELECT p_add WHERE p_add IS NOT NULL) AS g
     WHERE g.role_name IS DISTINCT FROM p_remove
       AND EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = g.role_name);

    IF cardinality(v_roles) = 0 THEN
        IF EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
            EXECUTE format('DROP EVENT TRIGGER %I', v_trigger);
            -- Back to the schema's owner, whose migrations may drop it.
            EXECUTE format('ALTER FUNCTION %s OWNER TO %s', v_function,
                           (SELECT n.nspowner::regrole FROM pg_namespace AS n
                             WHERE n.oid = '__SCHEMA__'::regnamespace));
        END IF;
        IF v_setting THEN
            EXECUTE format('ALTER FUNCTION %s RESET taskhub.guarded_roles', v_function);
        END IF;
        IF obj_description(v_function, 'pg_proc') LIKE 'taskhub.guarded_roles=%' THEN
            EXECUTE format('COMMENT ON FUNCTION %s IS NULL', v_function);
        END IF;
    ELSE
        IF v_current IS DISTINCT FROM v_roles THEN
            -- A custom setting on a function needs a superuser from
            -- PostgreSQL 15 on (or a GRANT SET on it): else the comment.
            BEGIN
                EXECUTE format('ALTER FUNCTION %s SET taskhub.guarded_roles = %L',
                               v_function, v_roles);
            EXCEPTION WHEN insufficient_privilege THEN
                IF v_setting THEN
                    RAISE;  -- the list is a superuser's: this role may not change it
                END IF;
                EXECUTE format('COMMENT ON FUNCTION %s IS %L',
                               v_function, 'taskhub.guarded_roles=' || v_roles::text);
            END;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
            -- An event-trigger function runs as whoever runs DDL, superusers
            -- included: it must not stay changeable by a non-superuser owner.
            EXECUTE format('ALTER FUNCTION %s OWNER TO %I', v_function, current_user);
            EXECUTE format('CREATE EVENT TRIGGER %I ON ddl_command_end EXECUTE FUNCTION %s',
                           v_trigger, v_function);
        END IF;
    END IF;

    -- The workers' connections see only what is committed: a hub distributed
    -- by this very transaction is not there yet (the migration runner calls
    -- this again after its commit).
    IF to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema WHERE schemaid = $1'
                '                 AND xmin::text <> (txid_current() % 4294967296)::text)'
           INTO v_distributed USING '__SCHEMA__'::regnamespace;
    END IF;
    IF v_distributed THEN
        v_command := CASE WHEN cardinality(v_roles) = 0
                          THEN format('DROP EVENT TRIGGER IF EXISTS %I', v_trigger)
                          ELSE format('DO $guard$ BEGIN IF NOT EXISTS (SELECT 1 FROM '
                                      'pg_catalog.pg_event_trigger WHERE evtname = %L) THEN '
                                      'CREATE EVENT TRIGGER %I ON ddl_command_end EXECUTE '
                                      'FUNCTION %s; END IF; END $guard$',
                                      v_trigger, v_trigger, v_function) END;
        FOR v_node IN EXECUTE 'SELECT nodename || '':'' || nodeport AS node, success, result'
                              '  FROM run_command_on_workers($1)' USING v_command LOOP
            IF NOT v_node.success THEN
                RAISE EXCEPTION 'the runtime DDL guard could not be set on worker %: %',
                                v_node.node, v_node.result
                      USING ERRCODE = '55000';
            END IF;
        END LOOP;
    END IF;

    UPDATE __SCHEMA__.taskhub_definitions AS d
       SET settings = live.settings
      FROM (SELECT coalesce(p.proconfig, '{}') AS settings
              FROM pg_proc AS p
             WHERE p.oid = v_function) AS live
     WHERE d.object = 'function taskhub_refuse_runtime_ddl()'
       AND d.settings IS DISTINCT FROM live.settings
       AND __SCHEMA__.taskhub_settings_besides_guarded_roles(d.settings)
           = __SCHEMA__.taskhub_settings_besides_guarded_roles(live.settings);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_rebuild_runtime_ddl_guard(text, text) FROM PUBLIC;
