-- Messages ready to be fetched now: visible and not held by a live lease.
-- (A message's rank is never after its visible_at: the rank's index finds
-- the visible ones.)
CREATE FUNCTION __SCHEMA__.get_queue_depths(p_now_ms bigint)
RETURNS TABLE (orchestrator_queue bigint, worker_queue bigint)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.get_queue_depths($1)' USING p_now_ms;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT (SELECT count(*) FROM __SCHEMA__.orchestrator_queue AS q
             WHERE coalesce(q.taskhub_rank, q.visible_at) <= to_timestamp(v_now_ms / 1000.0)
               AND q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)),
           (SELECT count(*) FROM __SCHEMA__.worker_queue AS q
             WHERE coalesce(q.taskhub_rank, q.visible_at) <= to_timestamp(v_now_ms / 1000.0)
               AND q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms));
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.get_queue_depths(bigint) FROM PUBLIC;
