-- The operator's cancel (taskhub-pg cancel, the dashboard's): the
-- CancelInstance work item the duroxide client's cancel_instance writes,
-- built here from the instance and the reason, so that whoever may cancel
-- cannot write any other message. The runtime ends the instance as Failed
-- (cancelled) at its next turn, its sub-orchestrations with it. With
-- p_traceparent (and p_tracestate), the caller's W3C trace context goes with
-- it, as taskhub_enqueue_traced_orchestrator_work records it.
-- Refused, with nothing written, when there is no such instance (P0002) or
-- it has ended (55000). Returns the status it had: Running, or Pending for
-- an instance whose start no runtime has taken yet.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_cancel_instance(
    p_instance_id text,
    p_reason      text DEFAULT '',
    p_traceparent text DEFAULT NULL,
    p_tracestate  text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status text;
    v_item   text;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.taskhub_cancel_instance($1, $2, $3, $4)'
           INTO v_status
          USING p_instance_id, p_reason, p_traceparent, p_tracestate;
        RETURN v_status;
    END IF;
    IF p_instance_id IS NULL OR p_instance_id = '' THEN
        RAISE EXCEPTION 'p_instance_id must be a non-empty text' USING ERRCODE = '22023';
    ELSIF p_tracestate IS NOT NULL AND p_traceparent IS NULL THEN
        RAISE EXCEPTION 'p_tracestate needs p_traceparent' USING ERRCODE = '22023';
    END IF;
    v_status := __SCHEMA__.taskhub_status_unless_ended(p_instance_id, 'nothing to cancel');
    -- As the client writes it: compact, in this order (a NULL reason is '').
    v_item := format('{"CancelInstance":{"instance":%s,"reason":%s}}',
                     to_json(p_instance_id)::text, to_json(coalesce(p_reason, ''))::text);
    IF p_traceparent IS NULL THEN
        PERFORM __SCHEMA__.enqueue_orchestrator_work(p_instance_id, v_item, clock_timestamp());
    ELSE
        PERFORM __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(
            p_instance_id, v_item, clock_timestamp(), p_traceparent, p_tracestate);
    END IF;
    RETURN v_status;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_cancel_instance(text, text, text, text) FROM PUBLIC;
