-- All live keys of an instance (committed values overlaid by the current
-- execution's changes, removed keys left out).
CREATE FUNCTION __SCHEMA__.get_kv_all_values(p_instance text)
RETURNS TABLE (out_key text, out_value text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT coalesce(d.key, s.key), CASE WHEN d.key IS NOT NULL THEN d.value ELSE s.value END
      FROM (SELECT * FROM __SCHEMA__.kv_store WHERE instance_id = p_instance) AS s
      FULL JOIN (SELECT * FROM __SCHEMA__.kv_delta WHERE instance_id = p_instance) AS d
        ON d.key = s.key
     WHERE CASE WHEN d.key IS NOT NULL THEN d.value IS NOT NULL ELSE true END
     ORDER BY 1;
END;
$$;

