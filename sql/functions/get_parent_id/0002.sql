-- The parent of an instance (NULL for a root); 'Instance not found: <id>' if unknown.
CREATE FUNCTION __SCHEMA__.get_parent_id(p_instance_id text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parent text;
BEGIN
    SELECT i.parent_instance_id INTO v_parent
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_parent;
END;
$$;
