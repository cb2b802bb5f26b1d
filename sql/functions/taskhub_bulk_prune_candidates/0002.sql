-- Instances to prune, whatever their status; same filters.
CREATE FUNCTION __SCHEMA__.taskhub_bulk_prune_candidates(
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
     WHERE (p_instance_ids IS NULL OR i.instance_id = ANY (p_instance_ids))
       AND (p_completed_before_ms IS NULL
            OR EXISTS (SELECT 1 FROM __SCHEMA__.executions AS e
                        WHERE e.instance_id = i.instance_id
                          AND e.completed_at < to_timestamp(p_completed_before_ms / 1000.0)))
     ORDER BY i.created_at, i.instance_id
     LIMIT greatest(coalesce(p_limit, 1000), 0);
END;
$$;
