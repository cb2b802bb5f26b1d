-- Events of the newest execution of an instance, in event order.
CREATE FUNCTION __SCHEMA__.fetch_history(p_instance_id text)
RETURNS TABLE (out_event_data text)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_execution bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.fetch_history($1)' USING p_instance_id;
        RETURN;
    END IF;
    -- The latest execution first, then its events: one table a statement.
    SELECT coalesce(max(e.execution_id), 1) INTO v_execution
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id;
    RETURN QUERY
    SELECT h.event_data::text
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id
       AND h.execution_id = v_execution
     ORDER BY h.event_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.fetch_history(text) FROM PUBLIC;
