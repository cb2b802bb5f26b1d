-- Session leases: heartbeat and cleanup.

-- Extend the live, non-idle sessions of these owners to now + p_extend_ms.
-- Returns how many were extended. An expired or idle session is not revived,
-- and a session row busy elsewhere is skipped (the next heartbeat gets it)
-- rather than waited for.
CREATE FUNCTION __SCHEMA__.renew_session_lock(
    p_owner_ids       text[],
    p_now_ms          bigint,
    p_extend_ms       bigint,
    p_idle_timeout_ms bigint
)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms  bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_renewed bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_extend_ms > 0, 'p_extend_ms must be positive');
    PERFORM __SCHEMA__.taskhub_require(p_idle_timeout_ms >= 0, 'p_idle_timeout_ms must not be negative');
    IF p_owner_ids IS NULL OR cardinality(p_owner_ids) = 0 THEN
        RETURN 0;
    END IF;

    UPDATE __SCHEMA__.sessions AS s
       SET locked_until = v_now_ms + p_extend_ms
     WHERE s.session_id IN (SELECT live.session_id
                              FROM __SCHEMA__.sessions AS live
                             WHERE live.worker_id = ANY (p_owner_ids)
                               AND live.locked_until > v_now_ms
                               AND live.last_activity_at > v_now_ms - p_idle_timeout_ms
                               FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_renewed = ROW_COUNT;
    RETURN v_renewed;
END;
$$;

