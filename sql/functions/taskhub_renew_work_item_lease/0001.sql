-- The same with millisecond precision; returns the new end of the lease (ms).
CREATE FUNCTION __SCHEMA__.taskhub_renew_work_item_lease(
    p_lock_token text,
    p_now_ms     bigint,
    p_extend_ms  bigint
)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id           bigint;
    v_session      text;
    v_locked_until bigint;
    v_now_ms       bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_extend_ms > 0, 'p_extend_ms must be positive');

    SELECT lease.item_id, lease.session_id, lease.now_ms INTO v_id, v_session, v_now_ms
      FROM __SCHEMA__.taskhub_lock_worker_lease(
               p_lock_token, p_now_ms, 'Lock token invalid, expired, or already acked') AS lease;

    v_locked_until := v_now_ms + p_extend_ms;
    UPDATE __SCHEMA__.worker_queue AS q SET locked_until = v_locked_until WHERE q.id = v_id;
    IF v_session IS NOT NULL THEN
        PERFORM __SCHEMA__.taskhub_touch_session(v_session, v_now_ms);
    END IF;
    RETURN v_locked_until;
END;
$$;
