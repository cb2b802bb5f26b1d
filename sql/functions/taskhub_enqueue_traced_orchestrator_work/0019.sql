-- enqueue_orchestrator_work with the caller's W3C trace context, in one
-- transaction: the message and the context commit or roll back together.
--
-- The first context to reach an instance stays (a second start or an event
-- does not move its trace). A start records it before the instance exists;
-- any other message records it only for an instance that exists, so that
-- events for an instance that never starts leave nothing behind.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(
    p_instance_id text,
    p_work_item   text,
    p_visible_at  timestamptz,
    p_traceparent text,
    p_tracestate  text
)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.taskhub_enqueue_traced_orchestrator_work($1, $2, $3, $4, $5)'
            USING p_instance_id, p_work_item, p_visible_at, p_traceparent, p_tracestate;
        RETURN;
    END IF;
    IF p_traceparent IS NULL
       OR p_traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       OR p_traceparent ~ '^00-0{32}-' OR p_traceparent ~ '^00-[0-9a-f]{32}-0{16}-' THEN
        RAISE EXCEPTION 'p_traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>, not all zeros), got %',
            coalesce(quote_literal(left(p_traceparent, 80)), 'NULL')
            USING ERRCODE = '22023';
    ELSIF octet_length(p_tracestate) > 512 THEN
        RAISE EXCEPTION 'p_tracestate is longer than 512 bytes' USING ERRCODE = '22023';
    END IF;
    -- The message first: its checks refuse bad input before anything is written.
    PERFORM __SCHEMA__.enqueue_orchestrator_work(p_instance_id, p_work_item, p_visible_at);
    IF __SCHEMA__.taskhub_work_item_kind(p_work_item::jsonb) = 'StartOrchestration'
       OR EXISTS (SELECT 1 FROM __SCHEMA__.instances AS i WHERE i.instance_id = p_instance_id) THEN
        INSERT INTO __SCHEMA__.taskhub_trace_contexts (instance_id, traceparent, tracestate)
        VALUES (p_instance_id, p_traceparent, nullif(p_tracestate, ''))
        ON CONFLICT (instance_id) DO NOTHING;
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(text, text, timestamp with time zone, text, text) FROM PUBLIC;
