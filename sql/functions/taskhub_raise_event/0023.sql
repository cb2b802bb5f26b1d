-- The operator's raise-event (taskhub-pg raise-event): the ExternalRaised
-- work item the duroxide client's raise_event writes, built here from the
-- instance, the event's name and its data (a JSON text, e.g. '"yes"'), so
-- that whoever may raise an event cannot write any other message. The
-- orchestration's wait for p_name receives the data. With p_traceparent (and
-- p_tracestate), the caller's W3C trace context goes with it, as
-- taskhub_enqueue_traced_orchestrator_work records it.
-- Refused, with nothing written, when there is no such instance (P0002) or
-- it has ended (55000). Returns the status it had: Running, or Pending for
-- an instance whose start no runtime has taken yet.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_raise_event(
    p_instance_id text,
    p_name        text,
    p_data        text DEFAULT 'null',
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
        EXECUTE 'SELECT __SCHEMA__.taskhub_raise_event($1, $2, $3, $4, $5)'
           INTO v_status
          USING p_instance_id, p_name, p_data, p_traceparent, p_tracestate;
        RETURN v_status;
    END IF;
    IF p_instance_id IS NULL OR p_instance_id = '' THEN
        RAISE EXCEPTION 'p_instance_id must be a non-empty text' USING ERRCODE = '22023';
    ELSIF p_name IS NULL OR p_name = '' THEN
        RAISE EXCEPTION 'p_name must be a non-empty text' USING ERRCODE = '22023';
    ELSIF p_data IS NULL OR __SCHEMA__.taskhub_try_jsonb(p_data) IS NULL THEN
        RAISE EXCEPTION 'p_data must be a JSON text (the event''s data, e.g. ''"yes"'' or ''null''), got %',
                        coalesce(quote_literal(left(p_data, 80)), 'NULL')
              USING ERRCODE = '22023';
    ELSIF p_tracestate IS NOT NULL AND p_traceparent IS NULL THEN
        RAISE EXCEPTION 'p_tracestate needs p_traceparent' USING ERRCODE = '22023';
    END IF;
    v_status := __SCHEMA__.taskhub_status_unless_ended(p_instance_id, 'nobody waits for it');
    -- As the client writes it: compact, in this order, the data as a JSON text.
    v_item := format('{"ExternalRaised":{"instance":%s,"name":%s,"data":%s}}',
                     to_json(p_instance_id)::text, to_json(p_name)::text, to_json(p_data)::text);
    IF p_traceparent IS NULL THEN
        PERFORM __SCHEMA__.enqueue_orchestrator_work(p_instance_id, v_item, clock_timestamp());
    ELSE
        PERFORM __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(
            p_instance_id, v_item, clock_timestamp(), p_traceparent, p_tracestate);
    END IF;
    RETURN v_status;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_raise_event(text, text, text, text, text) FROM PUBLIC;
