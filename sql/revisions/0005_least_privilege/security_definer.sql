-- taskhub-pg 0005: the procedures run with their owner's rights.
--
-- A runtime role then needs EXECUTE on the procedures it calls and nothing on
-- the queue tables: it cannot insert, update or delete a row behind the
-- procedures' back. Every procedure made SECURITY DEFINER here already pins
-- `search_path = pg_catalog, pg_temp`, so a caller's search_path cannot
-- redirect a name inside it to an object of the caller's choosing.

-- What a runtime role is granted, one row per object, with the reason.
-- `python -m provider upgrade --runtime-role R` (or `-x runtime_role=R`)
-- grants exactly these; later revisions add their rows here.
CREATE TABLE __SCHEMA__.taskhub_runtime_privileges (
    object_kind text NOT NULL CHECK (object_kind IN ('function', 'table')),
    object_name text NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('EXECUTE', 'SELECT')),
    needed_by   text NOT NULL,
    PRIMARY KEY (object_kind, object_name),
    CHECK ((object_kind = 'function') = (privilege = 'EXECUTE'))
);

INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE', 'duroxide runtime and taskhub provider'
  FROM unnest(ARRAY[
           'abandon_orchestration_item', 'abandon_work_item', 'ack_orchestration_item',
           'ack_worker', 'append_history', 'cleanup_orphaned_sessions',
           'delete_instances_atomic', 'enqueue_orchestrator_work', 'enqueue_worker_work',
           'fetch_history', 'fetch_history_with_execution', 'fetch_orchestration_item',
           'fetch_work_item', 'get_custom_status', 'get_execution_info', 'get_instance_info',
           'get_instance_stats', 'get_kv_all_values', 'get_kv_value', 'get_parent_id',
           'get_queue_depths', 'get_system_metrics', 'latest_execution_id', 'list_children',
           'list_executions', 'list_instances', 'list_instances_by_status', 'prune_executions',
           'renew_orchestration_item_lock', 'renew_session_lock', 'renew_work_item_lock'
       ]) AS name
UNION ALL
SELECT 'function', name, 'EXECUTE', 'taskhub provider (bulk management, millisecond renewal)'
  FROM unnest(ARRAY[
           'taskhub_bulk_delete_candidates', 'taskhub_bulk_prune_candidates',
           'taskhub_renew_orchestration_lease', 'taskhub_renew_session_lease',
           'taskhub_renew_work_item_lease'
       ]) AS name
UNION ALL
VALUES
    ('table', 'instances', 'SELECT', 'duroxide runtime: inline SQL of delete_instance_bulk, prune_executions_bulk'),
    ('table', 'executions', 'SELECT', 'duroxide runtime: inline SQL of delete_instance_bulk, prune_executions_bulk'),
    ('table', '_duroxide_migrations', 'SELECT',
     'duroxide runtime: its migration runner reads the applied versions on connect');

-- cleanup_schema (drops the task hub) and the migration helpers stay
-- SECURITY INVOKER and are granted to no runtime role. The operator actions
-- run as their owner too, so an operator role needs only EXECUTE on them.
DO $definer$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND (p.proname IN (SELECT object_name
                                FROM __SCHEMA__.taskhub_runtime_privileges
                               WHERE object_kind = 'function')
                OR p.proname IN ('taskhub_requeue_dead_letter',
                                 'taskhub_release_orchestration_lease'))
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', v_fn.signature);
    END LOOP;
END
$definer$;
