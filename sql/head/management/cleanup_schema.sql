-- Remove the whole task hub from this schema: every table (rows included)
-- and every function, the Alembic version table too, so that the schema can
-- be migrated again from scratch. Used by test harnesses to tear down.
--
-- It first takes back what runtime roles were granted, which also drops this
-- schema's DDL guard (an event trigger of the whole database), and what
-- operator roles were granted.
CREATE FUNCTION __SCHEMA__.cleanup_schema()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_functions text[];
    v_role      text;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.cleanup_schema()';
        RETURN;
    END IF;
    FOR v_role IN SELECT r.role_name FROM __SCHEMA__.taskhub_runtime_roles AS r LOOP
        PERFORM __SCHEMA__.taskhub_revoke_runtime_role(v_role);
    END LOOP;
    FOR v_role IN SELECT r.role_name FROM __SCHEMA__.taskhub_operator_roles AS r LOOP
        PERFORM __SCHEMA__.taskhub_revoke_operator_role(v_role);
    END LOOP;
    -- The hub's functions, found before their list goes with the tables:
    -- every taskhub_* helper and every contract function the runtime is
    -- granted (taskhub_runtime_privileges), so that an application's own
    -- functions in a shared schema (public) stay.
    SELECT array_agg(format('__SCHEMA__.%I(%s)', p.proname,
                            pg_get_function_identity_arguments(p.oid)))
      INTO v_functions
      FROM pg_proc AS p
     WHERE p.pronamespace = '__SCHEMA__'::regnamespace
       AND p.proname <> 'cleanup_schema'
       AND (p.proname LIKE 'taskhub\_%'
            OR p.proname IN (SELECT g.object_name
                               FROM __SCHEMA__.taskhub_runtime_privileges AS g
                              WHERE g.object_kind = 'function'));
    DROP TABLE IF EXISTS
        __SCHEMA__.instances, __SCHEMA__.executions, __SCHEMA__.history,
        __SCHEMA__.orchestrator_queue, __SCHEMA__.worker_queue, __SCHEMA__.instance_locks,
        __SCHEMA__.sessions, __SCHEMA__.kv_store, __SCHEMA__.kv_delta,
        __SCHEMA__._duroxide_migrations, __SCHEMA__.taskhub_set_aside_functions,
        __SCHEMA__.taskhub_adopted, __SCHEMA__.taskhub_pg_alembic_version,
        __SCHEMA__.taskhub_settings, __SCHEMA__.dead_letters,
        __SCHEMA__.taskhub_runtime_privileges, __SCHEMA__.taskhub_runtime_roles,
        __SCHEMA__.shielded_failures, __SCHEMA__.taskhub_wakeup_listeners,
        __SCHEMA__.taskhub_definitions, __SCHEMA__.taskhub_operator_roles,
        __SCHEMA__.taskhub_operator_privileges, __SCHEMA__.taskhub_trace_contexts,
        __SCHEMA__.taskhub_schedules, __SCHEMA__.taskhub_flow_rules,
        __SCHEMA__.taskhub_flow_slots, __SCHEMA__.taskhub_flow_changes,
        __SCHEMA__.taskhub_flow_summary, __SCHEMA__.taskhub_flow_buckets,
        __SCHEMA__.taskhub_instance_labels, __SCHEMA__.taskhub_restarts
        CASCADE;
    IF v_functions IS NOT NULL THEN
        EXECUTE 'DROP FUNCTION ' || array_to_string(v_functions, ', ');
    END IF;
    -- Last, this function itself: the running call keeps its compiled body.
    DROP FUNCTION __SCHEMA__.cleanup_schema();
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.cleanup_schema() FROM PUBLIC;
