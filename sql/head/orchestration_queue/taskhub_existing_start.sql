-- What the start of an instance said, if the instance exists or its start is
-- queued: its orchestration, version and input (the input as the JSON text
-- the client wrote). No row: no such start. Read in this order:
--   1. a StartOrchestration still queued: all three, as the caller gave them;
--   2. the instance's row (name, version as the runtime resolved it) and its
--      first execution's OrchestrationStarted event (the input), while that
--      history is kept: once it is pruned the input is NULL (unknown).
CREATE FUNCTION __SCHEMA__.taskhub_existing_start(p_instance_id text)
RETURNS TABLE (out_orchestration text, out_version text, out_input text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_item  jsonb;
    v_event jsonb;
BEGIN
    FOR v_item IN
        SELECT __SCHEMA__.taskhub_try_jsonb(q.work_item)
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.instance_id = p_instance_id
         ORDER BY q.id
    LOOP
        IF __SCHEMA__.taskhub_work_item_kind(v_item) = 'StartOrchestration' THEN
            out_orchestration := v_item -> 'StartOrchestration' ->> 'orchestration';
            out_version := v_item -> 'StartOrchestration' ->> 'version';
            out_input := v_item -> 'StartOrchestration' ->> 'input';
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;

    SELECT i.orchestration_name, i.orchestration_version
      INTO out_orchestration, out_version
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- The runtime writes OrchestrationStarted first (event 1); event_type
    -- says nothing (duroxide stores "Event" for every event).
    SELECT __SCHEMA__.taskhub_try_jsonb(h.event_data::text) INTO v_event
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id
       AND h.execution_id = 1
     ORDER BY h.event_id
     LIMIT 1;
    IF v_event ->> 'type' = 'OrchestrationStarted' THEN
        out_input := v_event ->> 'input';
    END IF;
    RETURN NEXT;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_existing_start(text) FROM PUBLIC;
