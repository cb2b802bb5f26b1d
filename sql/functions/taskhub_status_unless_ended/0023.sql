-- The status of the instance an operator's message is for (its current
-- execution's, Running before that is written; Pending when it is known only
-- by its queued messages, its start not taken yet). Refused, with nothing
-- written, when there is no such instance (P0002) or it has ended (55000,
-- saying p_if_ended): what taskhub_cancel_instance and taskhub_raise_event
-- check first. Two one-table reads, as on a distributed hub. Internal helper.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_status_unless_ended(p_instance_id text, p_if_ended text)
RETURNS text
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_execution_id bigint;
    v_status       text;
BEGIN
    SELECT i.current_execution_id INTO v_execution_id
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        PERFORM 1 FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = p_instance_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'instance % not found', p_instance_id USING ERRCODE = 'P0002';
        END IF;
        RETURN 'Pending';
    END IF;
    SELECT e.status INTO v_status
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id AND e.execution_id = v_execution_id;
    IF v_status IN ('Completed', 'Failed', 'ContinuedAsNew') THEN
        RAISE EXCEPTION 'instance % already ended (%): %', p_instance_id, v_status, p_if_ended
              USING ERRCODE = '55000';
    END IF;
    RETURN coalesce(v_status, 'Running');
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_status_unless_ended(text, text) FROM PUBLIC;
