-- Which instances a bulk delete or bulk prune works on.

-- Root instances whose current execution has ended (Completed, Failed,
-- ContinuedAsNew), optionally limited to p_instance_ids and to executions
-- completed before p_completed_before_ms; oldest first, at most p_limit.
CREATE FUNCTION __SCHEMA__.taskhub_bulk_delete_candidates(
    p_instance_ids        text[],
    p_completed_before_ms bigint,
    p_limit               integer
)
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
     WHERE i.parent_instance_id IS NULL
       AND e.status IN ('Completed', 'Failed', 'ContinuedAsNew')
       AND (p_instance_ids IS NULL OR i.instance_id = ANY (p_instance_ids))
       AND (p_completed_before_ms IS NULL
            OR e.completed_at < to_timestamp(p_completed_before_ms / 1000.0))
     ORDER BY i.created_at, i.instance_id
     LIMIT greatest(coalesce(p_limit, 1000), 0);
END;
$$;

