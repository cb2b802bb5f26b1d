-- Append events ({event_id, event_type, event_data}) to one execution.
-- Existing events are never overwritten: a duplicate event id is ignored.
CREATE FUNCTION __SCHEMA__.append_history(p_instance_id text, p_execution_id bigint, p_events jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_events IS NULL OR p_events = '[]'::jsonb THEN
        RETURN;
    END IF;
    PERFORM __SCHEMA__.taskhub_require(p_instance_id <> '', 'p_instance_id must be a non-empty text');
    PERFORM __SCHEMA__.taskhub_require(p_execution_id >= 1, 'p_execution_id must be >= 1');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(p_events) = 'array', 'p_events must be a JSON array');
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
           coalesce(e ->> 'event_type', 'Event'), e ->> 'event_data', clock_timestamp()
      FROM jsonb_array_elements(p_events) AS e
    ON CONFLICT (instance_id, execution_id, event_id) DO NOTHING;
END;
$$;
