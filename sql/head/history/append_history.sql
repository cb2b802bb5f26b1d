-- Append events ({event_id, event_type, event_data}) to one execution.
-- Existing events are never overwritten: a duplicate event id is ignored.
-- An event_data with a \u0000 escape or nested deeper than
-- taskhub_max_json_depth is refused (taskhub_storable_json), as is one that
-- is not JSON (the cast), and the failed call writes nothing.
CREATE FUNCTION __SCHEMA__.append_history(p_instance_id text, p_execution_id bigint, p_events jsonb)
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
        EXECUTE 'SELECT __SCHEMA__.append_history($1, $2, $3)'
            USING p_instance_id, p_execution_id, p_events;
        RETURN;
    END IF;
    IF p_events IS NULL OR p_events = '[]'::jsonb THEN
        RETURN;
    END IF;
    IF p_instance_id IS NULL OR p_instance_id = '' THEN
        RAISE EXCEPTION 'p_instance_id must be a non-empty text' USING ERRCODE = '22023';
    END IF;
    IF p_execution_id IS NULL OR p_execution_id < 1 THEN
        RAISE EXCEPTION 'p_execution_id must be >= 1' USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(p_events) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'p_events must be a JSON array' USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_events) AS e
                WHERE jsonb_typeof(e) <> 'object'
                   OR jsonb_typeof(e -> 'event_id') <> 'number'
                   OR (e ->> 'event_id')::numeric < 1
                   OR jsonb_typeof(e -> 'event_data') <> 'string') THEN
        RAISE EXCEPTION 'Invalid event_id in append_history'
            USING ERRCODE = '22023',
                  DETAIL = 'Every event needs a positive event_id and an event_data string.';
    END IF;
    INSERT INTO __SCHEMA__.history
           (instance_id, execution_id, event_id, event_type, event_data, created_at)
    SELECT p_instance_id, p_execution_id, (e ->> 'event_id')::bigint,
           coalesce(e ->> 'event_type', 'Event'),
           __SCHEMA__.taskhub_storable_json(e ->> 'event_data', 'event ' || (e ->> 'event_id'))::json,
           clock_timestamp()
      FROM jsonb_array_elements(p_events) AS e
    ON CONFLICT (instance_id, execution_id, event_id) DO NOTHING;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.append_history(text, bigint, jsonb) FROM PUBLIC;
