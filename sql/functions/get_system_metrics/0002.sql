-- Totals over the whole hub; statuses are those of current executions.
CREATE FUNCTION __SCHEMA__.get_system_metrics()
RETURNS TABLE (
    total_instances     bigint,
    total_executions    bigint,
    running_instances   bigint,
    completed_instances bigint,
    failed_instances    bigint,
    total_events        bigint
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT (SELECT count(*) FROM __SCHEMA__.instances),
           (SELECT count(*) FROM __SCHEMA__.executions),
           count(*) FILTER (WHERE e.status = 'Running'),
           count(*) FILTER (WHERE e.status = 'Completed'),
           count(*) FILTER (WHERE e.status = 'Failed'),
           (SELECT count(*) FROM __SCHEMA__.history)
      FROM __SCHEMA__.instances AS i
      JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id;
END;
$$;

