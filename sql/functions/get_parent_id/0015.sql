-- The parent of an instance (NULL for a root); 'Instance not found: <id>' if unknown.
CREATE OR REPLACE FUNCTION __SCHEMA__.get_parent_id(p_instance_id text)
RETURNS text
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parent text;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        DECLARE
            v_result text;
        BEGIN
            EXECUTE 'SELECT __SCHEMA__.get_parent_id($1)' INTO v_result USING p_instance_id;
            RETURN v_result;
        END;
    END IF;
    SELECT i.parent_instance_id INTO v_parent
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_parent;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.get_parent_id(text) FROM PUBLIC;
