-- Reads of custom status and key-value state.

-- The custom status, only when its version is newer than p_last_seen_version
-- (so a client can poll for changes). No row otherwise.
CREATE FUNCTION __SCHEMA__.get_custom_status(p_instance_id text, p_last_seen_version bigint)
RETURNS TABLE (out_custom_status text, out_custom_status_version bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.custom_status, i.custom_status_version::bigint
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id
       AND i.custom_status_version > coalesce(p_last_seen_version, 0);
END;
$$;

