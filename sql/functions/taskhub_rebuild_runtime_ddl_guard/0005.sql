-- Point the guard at the currently guarded roles; drop it when there are none.
-- Changing the guard needs a superuser; a run that changes nothing (the
-- owner's next migration, say) touches nothing, so it needs no superuser.
CREATE FUNCTION __SCHEMA__.taskhub_rebuild_runtime_ddl_guard()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_trigger  text := __SCHEMA__.taskhub_runtime_ddl_guard_name();
    v_function regprocedure := '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure;
    v_roles    text[];
    v_current  text;
BEGIN
    SELECT coalesce(array_agg(r.role_name ORDER BY r.role_name), '{}') INTO v_roles
      FROM __SCHEMA__.taskhub_runtime_roles AS r
     WHERE r.runtime_ddl = 'guarded';
    SELECT c.setting INTO v_current
      FROM pg_proc AS p
     CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
     WHERE p.oid = v_function AND c.setting LIKE 'taskhub.guarded_roles=%';

    IF cardinality(v_roles) = 0 THEN
        IF EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
            EXECUTE format('DROP EVENT TRIGGER %I', v_trigger);
            -- Back to the schema's owner, whose migrations may drop it.
            EXECUTE format('ALTER FUNCTION %s OWNER TO %s', v_function,
                           (SELECT n.nspowner::regrole FROM pg_namespace AS n
                             WHERE n.oid = '__SCHEMA__'::regnamespace));
        END IF;
        IF v_current IS NOT NULL THEN
            EXECUTE format('ALTER FUNCTION %s RESET taskhub.guarded_roles', v_function);
        END IF;
        RETURN;
    END IF;
    IF v_current IS DISTINCT FROM 'taskhub.guarded_roles=' || v_roles::text THEN
        EXECUTE format('ALTER FUNCTION %s SET taskhub.guarded_roles = %L', v_function, v_roles);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
        -- An event-trigger function runs as whoever runs DDL, superusers
        -- included: it must not stay changeable by a non-superuser owner.
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', v_function, current_user);
        EXECUTE format('CREATE EVENT TRIGGER %I ON ddl_command_end EXECUTE FUNCTION %s',
                       v_trigger, v_function);
    END IF;
END;
$$;

