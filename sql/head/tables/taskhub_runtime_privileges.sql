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
SELECT 'function', name, 'EXECUTE', 'taskhub workers: push wakeups (LISTEN instead of polling)'
  FROM unnest(ARRAY['taskhub_listen', 'taskhub_set_waiting']) AS name
UNION ALL
SELECT 'function', 'taskhub_find_instances', 'EXECUTE',
       'taskhub provider: find_instances, delete_instance of an instance not started'
UNION ALL
SELECT 'function', 'taskhub_search_instances', 'EXECUTE',
       'taskhub provider: find_instances by id prefix or a part of the name'
UNION ALL
SELECT 'function', name, 'EXECUTE',
       'taskhub provider: W3C trace context of start_orchestration, raise_event and the workers'
  FROM unnest(ARRAY['taskhub_enqueue_traced_orchestrator_work', 'taskhub_trace_context']) AS name
UNION ALL
SELECT 'function', 'taskhub_start_orchestration', 'EXECUTE',
       'taskhub provider: start_orchestration, safe to repeat with the same instance id'
UNION ALL
SELECT 'function', name, 'EXECUTE',
       'taskhub application client: start and start_many (once, all or none), and cancel and'
       ' raise_event refused for unknown and ended instances'
  FROM unnest(ARRAY['taskhub_start_orchestrations', 'taskhub_cancel_instance',
                    'taskhub_raise_event']) AS name
UNION ALL
SELECT 'function', name, 'EXECUTE', 'taskhub schedules: managed by the application, run by its scheduler'
  FROM unnest(ARRAY['taskhub_set_schedule', 'taskhub_pause_schedule', 'taskhub_remove_schedule',
                    'taskhub_list_schedules', 'taskhub_fire_schedule']) AS name
UNION ALL
SELECT 'function', name, 'EXECUTE',
       'taskhub schedules: one that cannot start stops no other, and is paused after a few failures'
  FROM unnest(ARRAY['taskhub_fire_schedule_outcome', 'taskhub_read_schedules',
                    'taskhub_count_schedule_failure']) AS name
UNION ALL
SELECT 'function', 'taskhub_start_steered_orchestrations', 'EXECUTE',
       'taskhub application client: start and start_many with a priority and labels'
UNION ALL
SELECT 'function', 'taskhub_set_steered_schedule', 'EXECUTE',
       'taskhub schedules: a schedule whose ticks start with a priority and labels'
UNION ALL
SELECT 'function', name, 'EXECUTE',
       'taskhub application client: restart an ended instance (another input too), read the record'
  FROM unnest(ARRAY['taskhub_restart_instance', 'taskhub_restart_instance_with_input',
                    'taskhub_read_restarts']) AS name
UNION ALL
VALUES
    ('table', 'instances', 'SELECT', 'duroxide runtime: inline SQL of delete_instance_bulk, prune_executions_bulk'),
    ('table', 'executions', 'SELECT', 'duroxide runtime: inline SQL of delete_instance_bulk, prune_executions_bulk'),
    ('table', '_duroxide_migrations', 'SELECT',
     'duroxide runtime: its migration runner reads the applied versions on connect');
