-- Extend one session lease held by p_owner_id to now + p_extend_ms and
-- return its new end (ms). A session that is gone, expired, or owned by
-- someone else is not revived: 'Session lease lost' (SQLSTATE TH001), which
-- the provider raises as LockLost. (renew_session_lock renews a worker's
-- sessions in bulk and only counts them.)
CREATE FUNCTION __SCHEMA__.taskhub_renew_session_lease(
    p_session_id text,
    p_owner_id   text,
    p_now_ms     bigint,
    p_extend_ms  bigint
)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_owner        text;
    v_locked_until bigint;
    v_now_ms       bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_extend_ms > 0, 'p_extend_ms must be positive');

    -- Judge without a lock first: a fetcher locks only expired sessions.
    SELECT s.worker_id, s.locked_until INTO v_owner, v_locked_until
      FROM __SCHEMA__.sessions AS s
     WHERE s.session_id = p_session_id;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_owner IS DISTINCT FROM p_owner_id OR v_locked_until <= v_now_ms THEN
        RAISE EXCEPTION 'Session lease lost'
            USING ERRCODE = 'TH001',
                  DETAIL = format('Session %s is not held by %s.', p_session_id, p_owner_id);
    END IF;

    SELECT s.worker_id, s.locked_until INTO v_owner, v_locked_until
      FROM __SCHEMA__.sessions AS s
     WHERE s.session_id = p_session_id
       FOR UPDATE;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_owner IS DISTINCT FROM p_owner_id OR v_locked_until <= v_now_ms THEN
        RAISE EXCEPTION 'Session lease lost'
            USING ERRCODE = 'TH001',
                  DETAIL = format('Session %s is not held by %s.', p_session_id, p_owner_id);
    END IF;

    UPDATE __SCHEMA__.sessions AS s
       SET locked_until = v_now_ms + p_extend_ms
     WHERE s.session_id = p_session_id;
    RETURN v_now_ms + p_extend_ms;
END;
$$;
