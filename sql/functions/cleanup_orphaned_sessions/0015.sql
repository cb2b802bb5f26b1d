-- Delete expired sessions that no worker item refers to any more.
CREATE OR REPLACE FUNCTION __SCHEMA__.cleanup_orphaned_sessions(p_now_ms bigint)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms  bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_deleted bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        DECLARE
            v_result bigint;
        BEGIN
            EXECUTE 'SELECT __SCHEMA__.cleanup_orphaned_sessions($1)' INTO v_result USING p_now_ms;
            RETURN v_result;
        END;
    END IF;
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
REVOKE EXECUTE ON FUNCTION __SCHEMA__.cleanup_orphaned_sessions(bigint) FROM PUBLIC;
