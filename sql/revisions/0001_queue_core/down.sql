-- taskhub-pg 0001 down: remove everything 0001 created, and give an adopted
-- schema back as duroxide made it.

DROP FUNCTION IF EXISTS
    __SCHEMA__.append_history(text, bigint, jsonb),
    __SCHEMA__.fetch_history_with_execution(text, bigint),
    __SCHEMA__.fetch_history(text),
    __SCHEMA__.taskhub_renew_work_item_lease(text, bigint, bigint),
    __SCHEMA__.renew_work_item_lock(text, bigint, bigint),
    __SCHEMA__.abandon_work_item(text, bigint, bigint, boolean),
    __SCHEMA__.ack_worker(text, text, text, bigint),
    __SCHEMA__.taskhub_touch_session(text, bigint),
    __SCHEMA__.fetch_work_item(bigint, bigint, text, bigint, text[], text),
    __SCHEMA__.enqueue_worker_work(text, bigint, text, bigint, bigint, text, text),
    __SCHEMA__.taskhub_renew_orchestration_lease(text, bigint, bigint),
    __SCHEMA__.renew_orchestration_item_lock(text, bigint, bigint),
    __SCHEMA__.abandon_orchestration_item(text, bigint, bigint, boolean),
    __SCHEMA__.ack_orchestration_item(text, bigint, bigint, jsonb, jsonb, jsonb, jsonb, jsonb),
    __SCHEMA__.taskhub_apply_kv_mutations(text, bigint, jsonb, boolean, bigint),
    __SCHEMA__.taskhub_lock_worker_lease(text, bigint, text),
    __SCHEMA__.taskhub_lock_orchestration_lease(text, bigint, text),
    __SCHEMA__.fetch_orchestration_item(bigint, bigint, bigint, bigint),
    __SCHEMA__.enqueue_orchestrator_work(text, text, timestamptz, text, text, bigint),
    __SCHEMA__.taskhub_target_instance(jsonb),
    __SCHEMA__.taskhub_work_item_kind(jsonb),
    __SCHEMA__.taskhub_try_jsonb(text),
    __SCHEMA__.taskhub_require(boolean, text),
    __SCHEMA__.taskhub_session_lock_key(text),
    __SCHEMA__.taskhub_instance_lock_key(text),
    __SCHEMA__.taskhub_dead_letter_cap(),
    __SCHEMA__.taskhub_clock_ms(bigint),
    __SCHEMA__.taskhub_max_payload_bytes(),
    __SCHEMA__.taskhub_max_id_bytes();

-- Functions set aside when this schema was adopted come back.
SELECT __SCHEMA__.taskhub_restore_functions(
    ARRAY(SELECT function_name FROM __SCHEMA__.taskhub_set_aside_functions));
DROP FUNCTION __SCHEMA__.taskhub_restore_functions(text[]);
DROP FUNCTION __SCHEMA__.taskhub_set_aside_functions(text[]);
DROP TABLE __SCHEMA__.taskhub_set_aside_functions;
DROP TABLE IF EXISTS __SCHEMA__.dead_letters, __SCHEMA__.taskhub_settings;

DO $down$
BEGIN
    IF to_regclass('__SCHEMA__.taskhub_adopted') IS NOT NULL THEN
        -- Adopted: the tables and their rows stay; only what we added goes.
        DROP INDEX IF EXISTS
            __SCHEMA__.taskhub_instances_parent_idx,
            __SCHEMA__.taskhub_orch_visible_idx,
            __SCHEMA__.taskhub_orch_instance_idx,
            __SCHEMA__.taskhub_orch_lock_idx,
            __SCHEMA__.taskhub_worker_visible_idx,
            __SCHEMA__.taskhub_worker_activity_idx,
            __SCHEMA__.taskhub_worker_session_idx,
            __SCHEMA__.taskhub_worker_tag_idx,
            __SCHEMA__.taskhub_worker_lock_idx,
            __SCHEMA__.taskhub_instance_locks_token_idx,
            __SCHEMA__.taskhub_instance_locks_until_idx,
            __SCHEMA__.taskhub_sessions_worker_idx,
            __SCHEMA__.taskhub_kv_store_execution_idx;
        DELETE FROM __SCHEMA__._duroxide_migrations WHERE name LIKE '%_provided_by_taskhub_pg';
        DROP TABLE __SCHEMA__.taskhub_adopted;
    ELSE
        DROP TABLE IF EXISTS
            __SCHEMA__._duroxide_migrations,
            __SCHEMA__.kv_delta,
            __SCHEMA__.kv_store,
            __SCHEMA__.sessions,
            __SCHEMA__.instance_locks,
            __SCHEMA__.worker_queue,
            __SCHEMA__.orchestrator_queue,
            __SCHEMA__.history,
            __SCHEMA__.executions,
            __SCHEMA__.instances;
    END IF;
END
$down$;
