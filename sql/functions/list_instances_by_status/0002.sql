-- Instances whose current execution has this status, newest first.
CREATE FUNCTION __SCHEMA__.list_instances_by_status(p_status text)
RETURNS TABLE (instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id
      FROM __SCHEMA__.instances AS i
      JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE e.status = p_status
     ORDER BY i.created_at DESC, i.instance_id;
END;
$$;

