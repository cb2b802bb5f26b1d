-- The live value of one key: the current execution's change wins over the
-- committed value; a removed key is not found. Always exactly one row.
CREATE FUNCTION __SCHEMA__.get_kv_value(p_instance text, p_key text)
RETURNS TABLE (out_value text, out_found boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT CASE WHEN d.instance_id IS NOT NULL THEN d.value ELSE s.value END,
           CASE WHEN d.instance_id IS NOT NULL THEN d.value IS NOT NULL
                ELSE s.instance_id IS NOT NULL END
      FROM (SELECT 1) AS one
      LEFT JOIN __SCHEMA__.kv_delta AS d ON d.instance_id = p_instance AND d.key = p_key
      LEFT JOIN __SCHEMA__.kv_store AS s ON s.instance_id = p_instance AND s.key = p_key;
END;
$$;

