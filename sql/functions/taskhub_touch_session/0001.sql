-- Record activity on a live session (best effort: a session row that is busy
-- elsewhere is left alone rather than waited for). Internal helper.
CREATE FUNCTION __SCHEMA__.taskhub_touch_session(p_session_id text, p_now_ms bigint)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE __SCHEMA__.sessions AS s
       SET last_activity_at = p_now_ms
     WHERE s.session_id IN (SELECT live.session_id
                              FROM __SCHEMA__.sessions AS live
                             WHERE live.session_id = p_session_id
                               AND live.locked_until > p_now_ms
                               FOR UPDATE SKIP LOCKED);
END;
$$;
