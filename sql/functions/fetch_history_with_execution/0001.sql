-- Read and append orchestration history.

-- Events of one execution, in event order.
CREATE FUNCTION __SCHEMA__.fetch_history_with_execution(p_instance_id text, p_execution_id bigint)
RETURNS TABLE (out_event_data text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT h.event_data
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id
       AND h.execution_id = p_execution_id
     ORDER BY h.event_id;
END;
$$;

