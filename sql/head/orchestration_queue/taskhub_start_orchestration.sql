-- Start an orchestration once: the StartOrchestration work item is queued
-- (with the caller's W3C trace context when one is given) unless the
-- instance exists or a start of it is queued already. true: started by this
-- call; false: it already exists, nothing written.
--
-- A start whose outcome the caller did not hear (a connection lost at the
-- commit, a failover) is safe to repeat with the same instance id. Two
-- starts of one id serialize on a lock of that id, held to their commit: the
-- second sees the first, whoever commits it (the outbox's own transaction too),
-- and so do a start of one id and a batch of starts that holds it
-- (taskhub_start_orchestrations).
CREATE FUNCTION __SCHEMA__.taskhub_start_orchestration(
    p_instance_id text,
    p_work_item   text,
    p_visible_at  timestamptz,
    p_traceparent text,
    p_tracestate  text
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_started boolean;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.taskhub_start_orchestration($1, $2, $3, $4, $5)'
            INTO v_started
            USING p_instance_id, p_work_item, p_visible_at, p_traceparent, p_tracestate;
        RETURN v_started;
    END IF;
    IF __SCHEMA__.taskhub_work_item_kind(__SCHEMA__.taskhub_try_jsonb(p_work_item))
       IS DISTINCT FROM 'StartOrchestration' THEN
        RAISE EXCEPTION 'p_work_item must be a StartOrchestration work item'
            USING ERRCODE = '22023';
    END IF;
    -- Its stripe shared (a batch of starts holds it exclusively), then the id.
    PERFORM pg_advisory_xact_lock_shared(
        __SCHEMA__.taskhub_start_stripe_key(coalesce(p_instance_id, '')));
    PERFORM pg_advisory_xact_lock(
        hashtextextended('taskhub:__SCHEMA__:start:' || coalesce(p_instance_id, ''), 0));
    IF EXISTS (SELECT 1 FROM __SCHEMA__.instances AS i WHERE i.instance_id = p_instance_id)
       OR EXISTS (SELECT 1
                    FROM __SCHEMA__.orchestrator_queue AS q
                   WHERE q.instance_id = p_instance_id
                     AND __SCHEMA__.taskhub_work_item_kind(__SCHEMA__.taskhub_try_jsonb(q.work_item))
                         = 'StartOrchestration') THEN
        RETURN false;
    END IF;
    -- Started without steering: none left by an earlier instance of the id.
    DELETE FROM __SCHEMA__.taskhub_instance_labels AS l WHERE l.instance_id = p_instance_id;
    -- Every check of the message (ids, sizes, nesting) is the enqueue's own.
    IF p_traceparent IS NULL THEN
        PERFORM __SCHEMA__.enqueue_orchestrator_work(p_instance_id, p_work_item, p_visible_at);
    ELSE
        PERFORM __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(
            p_instance_id, p_work_item, p_visible_at, p_traceparent, p_tracestate);
    END IF;
    RETURN true;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_start_orchestration(text, text, timestamp with time zone, text, text) FROM PUBLIC;
