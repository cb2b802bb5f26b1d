-- Remove the whole task hub from this schema: every table (rows included)
-- and every function, the Alembic version table too, so that the schema can
-- be migrated again from scratch. Used by test harnesses to tear down.
CREATE FUNCTION __SCHEMA__.cleanup_schema()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fn record;
BEGIN
    DROP TABLE IF EXISTS
        __SCHEMA__.instances, __SCHEMA__.executions, __SCHEMA__.history,
        __SCHEMA__.orchestrator_queue, __SCHEMA__.worker_queue, __SCHEMA__.instance_locks,
        __SCHEMA__.sessions, __SCHEMA__.kv_store, __SCHEMA__.kv_delta,
        __SCHEMA__._duroxide_migrations, __SCHEMA__.taskhub_set_aside_functions,
        __SCHEMA__.taskhub_adopted, __SCHEMA__.taskhub_pg_alembic_version,
        __SCHEMA__.taskhub_settings, __SCHEMA__.dead_letters
        CASCADE;
    FOR v_fn IN
        SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND p.proname <> 'cleanup_schema'
           AND (p.proname LIKE 'taskhub\_%' OR p.proname = ANY (ARRAY[
                'enqueue_orchestrator_work', 'fetch_orchestration_item', 'ack_orchestration_item',
                'abandon_orchestration_item', 'renew_orchestration_item_lock',
                'enqueue_worker_work', 'fetch_work_item', 'ack_worker', 'abandon_work_item',
                'renew_work_item_lock', 'renew_session_lock', 'cleanup_orphaned_sessions',
                'fetch_history', 'fetch_history_with_execution', 'append_history',
                'list_instances', 'list_executions', 'latest_execution_id',
                'list_instances_by_status', 'get_instance_info', 'get_execution_info',
                'get_system_metrics', 'get_queue_depths', 'list_children', 'get_parent_id',
                'delete_instances_atomic', 'prune_executions', 'get_custom_status',
                'get_kv_value', 'get_kv_all_values', 'get_instance_stats']))
    LOOP
        EXECUTE format('DROP FUNCTION __SCHEMA__.%I(%s)', v_fn.proname, v_fn.args);
    END LOOP;
    -- Last, this function itself: the running call keeps its compiled body.
    DROP FUNCTION __SCHEMA__.cleanup_schema();
END;
$$;
