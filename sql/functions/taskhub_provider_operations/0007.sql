-- The provider operations whose failures the runtime records: the methods of
-- its Provider trait. A failure of anything else (the runtime's own checks)
-- is never shielded.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_provider_operations()
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ARRAY[
        'fetch_orchestration_item', 'ack_orchestration_item', 'abandon_orchestration_item',
        'renew_orchestration_item_lock', 'fetch_work_item', 'ack_work_item',
        'abandon_work_item', 'renew_work_item_lock', 'renew_session_lock',
        'cleanup_orphaned_sessions', 'enqueue_for_orchestrator', 'enqueue_for_worker',
        'enqueue_orchestrator_work', 'enqueue_worker_work', 'read', 'read_with_execution',
        'append_with_execution', 'get_custom_status', 'get_kv_value', 'get_kv_all_values']
$$;

