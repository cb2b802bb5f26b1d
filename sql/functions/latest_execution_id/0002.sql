-- The current execution id; 'Instance not found: <id>' when there is none.
CREATE FUNCTION __SCHEMA__.latest_execution_id(p_instance_id text)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_execution bigint;
BEGIN
    SELECT coalesce(
               (SELECT i.current_execution_id FROM __SCHEMA__.instances AS i
                 WHERE i.instance_id = p_instance_id),
               (SELECT max(e.execution_id) FROM __SCHEMA__.executions AS e
                 WHERE e.instance_id = p_instance_id))
      INTO v_execution;
    IF v_execution IS NULL THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_execution;
END;
$$;

