-- Direct children (sub-orchestrations) of an instance, oldest first.
CREATE FUNCTION __SCHEMA__.list_children(p_instance_id text)
RETURNS TABLE (child_instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id FROM __SCHEMA__.instances AS i
     WHERE i.parent_instance_id = p_instance_id
     ORDER BY i.created_at, i.instance_id;
END;
$$;

