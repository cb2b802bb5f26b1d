-- Instances whose current execution has this status, newest first.
CREATE OR REPLACE FUNCTION __SCHEMA__.list_instances_by_status(p_status text)
RETURNS TABLE (instance_id text)
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
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.list_instances_by_status($1)' USING p_status;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT i.instance_id
      FROM __SCHEMA__.instances AS i
      JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE e.status = p_status
     ORDER BY i.created_at DESC, i.instance_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.list_instances_by_status(text) FROM PUBLIC;
