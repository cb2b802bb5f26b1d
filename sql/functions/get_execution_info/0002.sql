-- One execution with its number of history events.
CREATE FUNCTION __SCHEMA__.get_execution_info(p_instance_id text, p_execution_id bigint)
RETURNS TABLE (
    execution_id bigint,
    status       text,
    output       text,
    started_at   timestamptz,
    completed_at timestamptz,
    event_count  bigint
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.execution_id, e.status, e.output, e.started_at, e.completed_at,
           (SELECT count(*) FROM __SCHEMA__.history AS h
             WHERE h.instance_id = e.instance_id AND h.execution_id = e.execution_id)
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
       AND e.execution_id = p_execution_id;
END;
$$;

