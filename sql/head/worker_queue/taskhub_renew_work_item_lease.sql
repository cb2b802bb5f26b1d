-- Extend a live worker lease to p_now_ms + p_extend_ms: renew_work_item_lock
-- (renew_work_item_lock.sql) with millisecond precision, and what the
-- provider's TaskHub.renew_work_item_lock calls. Returns the new end of the
-- lease (ms); refused as renew_work_item_lock refuses.
CREATE FUNCTION __SCHEMA__.taskhub_renew_work_item_lease(
    p_lock_token text,
    p_now_ms     bigint,
    p_extend_ms  bigint
)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id           bigint;
    v_session      text;
    v_locked_until bigint;
    v_now_ms       bigint;
BEGIN
    IF p_extend_ms IS NULL OR p_extend_ms <= 0 THEN
        RAISE EXCEPTION 'p_extend_ms must be positive' USING ERRCODE = '22023';
    END IF;

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
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_renew_work_item_lease(text, bigint, bigint) FROM PUBLIC;
