-- A turn read row by row, for a fetch that could not read it at once: each
-- message and event that cannot be parsed becomes a JSON string of its text
-- (the runtime cannot decode it and reports a history error), and a part
-- that cannot be assembled at all (larger than jsonb allows) becomes a JSON
-- string saying why. Never fails on what the rows hold. (Internal helper,
-- off the hot path.)
CREATE FUNCTION __SCHEMA__.taskhub_read_turn_row_by_row(
    p_instance    text,
    p_execution   bigint,
    p_message_ids bigint[]
)
RETURNS TABLE (out_messages jsonb, out_history jsonb, out_kv_snapshot jsonb)
LANGUAGE plpgsql
AS $$
BEGIN
    BEGIN
        SELECT jsonb_agg(coalesce(__SCHEMA__.taskhub_try_jsonb(q.work_item),
                                  to_jsonb(q.work_item)) ORDER BY q.id)
          INTO out_messages
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.id = ANY (p_message_ids);
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        out_messages := to_jsonb(format('the messages of %s cannot be read: %s', p_instance, SQLERRM));
    END;
    BEGIN
        SELECT coalesce(jsonb_agg(coalesce(__SCHEMA__.taskhub_try_jsonb(h.event_data::text),
                                           to_jsonb(h.event_data::text)) ORDER BY h.event_id), '[]')
          INTO out_history
          FROM __SCHEMA__.history AS h
         WHERE h.instance_id = p_instance
           AND h.execution_id = p_execution;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        out_history := to_jsonb(format('the history of %s cannot be read: %s', p_instance, SQLERRM));
    END;
    BEGIN
        SELECT coalesce(jsonb_object_agg(s.key, jsonb_build_object(
                   'value', s.value, 'last_updated_at_ms', s.last_updated_at_ms)), '{}')
          INTO out_kv_snapshot
          FROM __SCHEMA__.kv_store AS s
         WHERE s.instance_id = p_instance;
    EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
        out_kv_snapshot := '{}';
    END;
    RETURN NEXT;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_read_turn_row_by_row(text, bigint, bigint[]) FROM PUBLIC;
