-- The trace context an instance's work continues: its own, or else that of
-- its nearest ancestor that has one (a sub-orchestration started by the
-- runtime is in the trace of the instance that started it). No row: none.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_trace_context(p_instance_id text)
RETURNS TABLE (traceparent text, tracestate text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.taskhub_trace_context($1)'
            USING p_instance_id;
        RETURN;
    END IF;
    -- The common case, one index probe: the instance's own context.
    RETURN QUERY
        SELECT t.traceparent, t.tracestate
          FROM __SCHEMA__.taskhub_trace_contexts AS t
         WHERE t.instance_id = p_instance_id;
    IF FOUND THEN
        RETURN;
    END IF;
    -- Up the parent chain, nearest first; bounded, should a chain ever loop.
    RETURN QUERY
        WITH RECURSIVE ancestors (instance_id, depth) AS (
            SELECT i.parent_instance_id, 1
              FROM __SCHEMA__.instances AS i
             WHERE i.instance_id = p_instance_id AND i.parent_instance_id IS NOT NULL
            UNION ALL
            SELECT i.parent_instance_id, a.depth + 1
              FROM ancestors AS a
              JOIN __SCHEMA__.instances AS i ON i.instance_id = a.instance_id
             WHERE i.parent_instance_id IS NOT NULL AND a.depth < 64
        )
        SELECT t.traceparent, t.tracestate
          FROM ancestors AS a
          JOIN __SCHEMA__.taskhub_trace_contexts AS t ON t.instance_id = a.instance_id
         ORDER BY a.depth
         LIMIT 1;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_trace_context(text) FROM PUBLIC;
