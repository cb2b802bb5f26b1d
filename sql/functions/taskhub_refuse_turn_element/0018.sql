-- ack_orchestration_item's refusal of an element of its arrays, raised from
-- inside the statement that would write it (so that a valid turn pays for no
-- pass of its own over the arrays). The call fails and writes nothing.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_refuse_turn_element(p_problem integer)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RAISE EXCEPTION '%', CASE p_problem
        WHEN 1 THEN format('an event or work item is larger than %s bytes',
                           __SCHEMA__.taskhub_max_payload_bytes())
        WHEN 2 THEN 'every p_history_delta element needs a positive event_id and an event_data string'
        WHEN 3 THEN 'every p_worker_items element must be an ActivityExecute work item'
        ELSE 'every p_orchestrator_items element must be a work item of the form {"Variant": {...}}'
    END USING ERRCODE = '22023';
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_refuse_turn_element(integer) FROM PUBLIC;
