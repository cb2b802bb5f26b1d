-- Run an ended instance again with another input (Client.restart(...,
-- input=...)): what taskhub_restart says, p_input the input as JSON text.
-- The application's (its runtime roles and the owner); operator roles are
-- not granted it, so that an operator writes no start of its choosing.
CREATE FUNCTION __SCHEMA__.taskhub_restart_instance_with_input(
    p_instance_id       text,
    p_input             text,
    p_new_instance_id   text DEFAULT NULL,
    p_reason            text DEFAULT NULL,
    p_from_execution_id bigint DEFAULT NULL
)
RETURNS TABLE (
    out_instance_id       text,
    out_execution_id      bigint,
    out_from_execution_id bigint,
    out_from_status       text,
    out_repeated          boolean
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE
            'SELECT * FROM __SCHEMA__.taskhub_restart_instance_with_input($1, $2, $3, $4, $5)'
            USING p_instance_id, p_input, p_new_instance_id, p_reason, p_from_execution_id;
        RETURN;
    END IF;
    IF p_input IS NULL THEN
        RAISE EXCEPTION 'p_input must be JSON text (taskhub_restart_instance runs the input it '
                        'ran with)' USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT * FROM __SCHEMA__.taskhub_restart(
            p_instance_id, p_new_instance_id, p_input, p_reason, p_from_execution_id);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_restart_instance_with_input(text, text, text, text, bigint) FROM PUBLIC;
