-- Messages ready to be fetched now: visible and not held by a live lease.
CREATE FUNCTION __SCHEMA__.get_queue_depths(p_now_ms bigint)
RETURNS TABLE (orchestrator_queue bigint, worker_queue bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
BEGIN
    RETURN QUERY
    SELECT (SELECT count(*) FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)),
           (SELECT count(*) FROM __SCHEMA__.worker_queue AS q
             WHERE q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms));
END;
$$;

