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
    v_completion jsonb;
    v_now_ms     bigint;
    v_acked      boolean;
    v_session    text;
    v_seen_until bigint;
BEGIN
    -- Not valid JSON: the cast refuses it (22P02) before anything is written.
    v_completion := p_completion_json::jsonb;
    IF p_lock_token IS NULL THEN
        RAISE EXCEPTION 'p_lock_token must not be NULL' USING ERRCODE = '22023';
    ELSIF p_completion_json IS NOT NULL AND (p_instance_id IS NULL OR p_instance_id = '') THEN
        RAISE EXCEPTION 'p_instance_id is required when p_completion_json is provided'
            USING ERRCODE = '22023';
    ELSIF octet_length(p_completion_json) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'p_completion_json is larger than % bytes',
            __SCHEMA__.taskhub_max_payload_bytes() USING ERRCODE = '54000';
    ELSIF p_completion_json IS NOT NULL
          AND jsonb_typeof(v_completion -> 'ActivityCompleted') IS DISTINCT FROM 'object'
          AND jsonb_typeof(v_completion -> 'ActivityFailed') IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'p_completion_json must be an ActivityCompleted or ActivityFailed work item'
            USING ERRCODE = '22023';
    END IF;

    -- One statement: lock the item if its lease is live (an expired row fails
    -- the test on the snapshot and is not waited for), delete it, and queue
    -- the completion for the orchestration.
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    WITH leased AS (
        SELECT q.id
          FROM __SCHEMA__.worker_queue AS q
         WHERE q.lock_token = p_lock_token
           AND q.locked_until > v_now_ms
           FOR UPDATE
    ), done AS (
        DELETE FROM __SCHEMA__.worker_queue AS q
         USING leased
         WHERE q.id = leased.id
        RETURNING q.session_id
    ), completion AS (
        INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
        SELECT p_instance_id, p_completion_json, to_timestamp(v_now_ms / 1000.0),
               to_timestamp(v_now_ms / 1000.0)
          FROM done
         WHERE p_completion_json IS NOT NULL
    )
    SELECT true, done.session_id INTO v_acked, v_session FROM done;

    IF v_acked IS NULL THEN
        SELECT q.locked_until INTO v_seen_until
          FROM __SCHEMA__.worker_queue AS q
         WHERE q.lock_token = p_lock_token;
        RAISE EXCEPTION 'Worker queue item not found or already processed'
            USING ERRCODE = 'TH001',
                  DETAIL = CASE WHEN v_seen_until IS NULL
                                THEN 'No worker item holds this token: it was acked, cancelled, or taken over after it expired.'
                                ELSE format('The lease expired %s ms ago.', v_now_ms - v_seen_until) END;
    END IF;

    IF v_session IS NOT NULL THEN
        PERFORM __SCHEMA__.taskhub_touch_session(v_session, v_now_ms);
    END IF;
END;
$$;

