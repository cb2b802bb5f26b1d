-- Events of one execution, in event order.
CREATE FUNCTION __SCHEMA__.fetch_history_with_execution(p_instance_id text, p_execution_id bigint)
RETURNS TABLE (out_event_data text)
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
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.fetch_history_with_execution($1, $2)'
            USING p_instance_id, p_execution_id;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT h.event_data::text
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id
       AND h.execution_id = p_execution_id
     ORDER BY h.event_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.fetch_history_with_execution(text, bigint) FROM PUBLIC;
