-- Read-only management queries.

-- All instance ids, newest first.
CREATE FUNCTION __SCHEMA__.list_instances()
RETURNS TABLE (instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id FROM __SCHEMA__.instances AS i ORDER BY i.created_at DESC, i.instance_id;
END;
$$;

