-- One execution with its number of history events.
CREATE OR REPLACE FUNCTION __SCHEMA__.get_execution_info(p_instance_id text, p_execution_id bigint)
RETURNS TABLE (
    execution_id bigint,
    status       text,
    output       text,
    started_at   timestamptz,
    completed_at timestamptz,
    event_count  bigint
)
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
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.get_execution_info($1, $2)'
            USING p_instance_id, p_execution_id;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT e.execution_id, e.status, e.output, e.started_at, e.completed_at,
           (SELECT count(*) FROM __SCHEMA__.history AS h
             WHERE h.instance_id = e.instance_id AND h.execution_id = e.execution_id)
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
       AND e.execution_id = p_execution_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.get_execution_info(text, bigint) FROM PUBLIC;
