-- Execution ids of an instance, oldest first.
CREATE FUNCTION __SCHEMA__.list_executions(p_instance_id text)
RETURNS TABLE (execution_id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.execution_id FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
     ORDER BY e.execution_id;
END;
$$;

