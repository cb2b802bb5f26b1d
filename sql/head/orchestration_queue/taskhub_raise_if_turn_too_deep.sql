-- For a fetch of a turn handed out before: raises program_limit_exceeded
-- (which sends the fetch to taskhub_read_turn_row_by_row) when a message or
-- an event of the execution nests deeper than the runtime decodes; else
-- nothing. The exact check runs only for a row with enough brackets for it.
-- (Internal helper, off the hot path: on a redelivery only.)
CREATE FUNCTION __SCHEMA__.taskhub_raise_if_turn_too_deep(
    p_instance  text,
    p_execution bigint,
    p_items     text[]
)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    c_depth constant integer := __SCHEMA__.taskhub_max_json_depth();
    v_item  text;
BEGIN
    FOREACH v_item IN ARRAY p_items LOOP
        IF __SCHEMA__.taskhub_json_too_deep(v_item) THEN
            RAISE EXCEPTION 'a message to % is nested deeper than % levels', p_instance, c_depth
                USING ERRCODE = 'program_limit_exceeded';
        END IF;
    END LOOP;
    -- One table, no subquery: planned on the hub's node on Citus too.
    PERFORM 1
       FROM __SCHEMA__.history AS h
      WHERE h.instance_id = p_instance
        AND h.execution_id = p_execution
        AND __SCHEMA__.taskhub_json_openers(h.event_data::text) > c_depth
        AND __SCHEMA__.taskhub_json_too_deep(h.event_data::text)
      LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'an event of % is nested deeper than % levels', p_instance, c_depth
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_raise_if_turn_too_deep(text, bigint, text[]) FROM PUBLIC;
