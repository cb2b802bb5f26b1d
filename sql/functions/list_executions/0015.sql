-- Execution ids of an instance, oldest first.
CREATE OR REPLACE FUNCTION __SCHEMA__.list_executions(p_instance_id text)
RETURNS TABLE (execution_id bigint)
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
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.list_executions($1)' USING p_instance_id;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT e.execution_id FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
     ORDER BY e.execution_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.list_executions(text) FROM PUBLIC;
