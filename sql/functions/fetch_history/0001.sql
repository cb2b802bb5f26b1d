-- Events of the newest execution of an instance, in event order.
CREATE FUNCTION __SCHEMA__.fetch_history(p_instance_id text)
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
       AND h.execution_id = (SELECT coalesce(max(e.execution_id), 1)
                               FROM __SCHEMA__.executions AS e
                              WHERE e.instance_id = p_instance_id)
     ORDER BY h.event_id;
END;
$$;

