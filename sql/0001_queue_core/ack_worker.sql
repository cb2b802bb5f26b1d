-- Complete a worker item: delete it and, when p_completion_json is given, put
-- the completion (ActivityCompleted / ActivityFailed) on the orchestrator
-- queue of p_instance_id, in one transaction. A NULL completion is a
-- cancelled activity: the item is only deleted.
--
-- Refused with 'Worker queue item not found or already processed' (SQLSTATE
-- TH001) when the token holds no live lease: acked, expired, taken over, or
-- deleted by a cancellation. The clock is read after the row lock.
CREATE FUNCTION __SCHEMA__.ack_worker(
    p_lock_token      text,
    p_instance_id     text   DEFAULT NULL,
    p_completion_json text   DEFAULT NULL,
    p_now_ms          bigint DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id           bigint;
    v_session      text;
    v_now_ms       bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_lock_token IS NOT NULL, 'p_lock_token must not be NULL');
    IF p_completion_json IS NOT NULL THEN
        PERFORM __SCHEMA__.taskhub_require(p_instance_id <> '',
            'p_instance_id is required when p_completion_json is provided');
        PERFORM __SCHEMA__.taskhub_require(
            __SCHEMA__.taskhub_work_item_kind(__SCHEMA__.taskhub_try_jsonb(p_completion_json)) IS NOT NULL,
            'p_completion_json must be a JSON work item of the form {"Variant": {...}}');
    END IF;

    SELECT lease.item_id, lease.session_id, lease.now_ms INTO v_id, v_session, v_now_ms
      FROM __SCHEMA__.taskhub_lock_worker_lease(
               p_lock_token, p_now_ms, 'Worker queue item not found or already processed') AS lease;

    DELETE FROM __SCHEMA__.worker_queue AS q WHERE q.id = v_id;

    IF p_completion_json IS NOT NULL THEN
        INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
        VALUES (p_instance_id, p_completion_json, to_timestamp(v_now_ms / 1000.0),
                to_timestamp(v_now_ms / 1000.0));
    END IF;

    PERFORM __SCHEMA__.taskhub_touch_session(v_session, v_now_ms);
END;
$$;

-- Record activity on a live session (best effort: a session row that is busy
-- elsewhere is left alone rather than waited for).
CREATE FUNCTION __SCHEMA__.taskhub_touch_session(p_session_id text, p_now_ms bigint)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE __SCHEMA__.sessions AS s
       SET last_activity_at = p_now_ms
     WHERE s.session_id IN (SELECT live.session_id
                              FROM __SCHEMA__.sessions AS live
                             WHERE live.session_id = p_session_id
                               AND live.locked_until > p_now_ms
                               FOR UPDATE SKIP LOCKED)
$$;
