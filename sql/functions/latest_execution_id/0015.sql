-- The current execution id; 'Instance not found: <id>' when there is none.
CREATE OR REPLACE FUNCTION __SCHEMA__.latest_execution_id(p_instance_id text)
RETURNS bigint
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_execution bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        DECLARE
            v_result bigint;
        BEGIN
            EXECUTE 'SELECT __SCHEMA__.latest_execution_id($1)' INTO v_result USING p_instance_id;
            RETURN v_result;
        END;
    END IF;
    SELECT coalesce(
               (SELECT i.current_execution_id FROM __SCHEMA__.instances AS i
                 WHERE i.instance_id = p_instance_id),
               (SELECT max(e.execution_id) FROM __SCHEMA__.executions AS e
                 WHERE e.instance_id = p_instance_id))
      INTO v_execution;
    IF v_execution IS NULL THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_execution;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.latest_execution_id(text) FROM PUBLIC;
