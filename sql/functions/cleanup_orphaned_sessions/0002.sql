-- Delete expired sessions that no worker item refers to any more.
CREATE FUNCTION __SCHEMA__.cleanup_orphaned_sessions(p_now_ms bigint)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms  bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_deleted bigint;
BEGIN
    DELETE FROM __SCHEMA__.sessions AS s
     WHERE s.session_id IN (SELECT expired.session_id
                              FROM __SCHEMA__.sessions AS expired
                             WHERE expired.locked_until < v_now_ms
                               AND NOT EXISTS (SELECT 1
                                                 FROM __SCHEMA__.worker_queue AS q
                                                WHERE q.session_id = expired.session_id)
                               FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END;
$$;
