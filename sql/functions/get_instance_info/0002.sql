-- An instance with the status and output of its current execution.
CREATE FUNCTION __SCHEMA__.get_instance_info(p_instance_id text)
RETURNS TABLE (
    instance_id           text,
    orchestration_name    text,
    orchestration_version text,
    current_execution_id  bigint,
    created_at            timestamptz,
    updated_at            timestamptz,
    status                text,
    output                text,
    parent_instance_id    text
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id, i.orchestration_name, coalesce(i.orchestration_version, 'unknown'),
           i.current_execution_id, i.created_at, i.updated_at, e.status, e.output,
           i.parent_instance_id
      FROM __SCHEMA__.instances AS i
      LEFT JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE i.instance_id = p_instance_id;
END;
$$;

