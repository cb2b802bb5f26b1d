-- The custom status, only when its version is newer than p_last_seen_version
-- (so a client can poll for changes). No row otherwise.
CREATE OR REPLACE FUNCTION __SCHEMA__.get_custom_status(p_instance_id text, p_last_seen_version bigint)
RETURNS TABLE (out_custom_status text, out_custom_status_version bigint)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.get_custom_status($1, $2)'
            USING p_instance_id, p_last_seen_version;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT i.custom_status, i.custom_status_version::bigint
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id
       AND i.custom_status_version > coalesce(p_last_seen_version, 0);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.get_custom_status(text, bigint) FROM PUBLIC;
