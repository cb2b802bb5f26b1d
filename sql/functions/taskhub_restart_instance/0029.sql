-- Run an ended instance again, from the input it last ran with
-- (taskhub-pg restart, the dashboard's restart, Client.restart): what
-- taskhub_restart says, for operator roles and the application. Another
-- input is the application's to give (taskhub_restart_instance_with_input,
-- which operators are not granted): an operator runs again what ran, and
-- writes no start of its choosing.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_restart_instance(
    p_instance_id       text,
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
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.taskhub_restart_instance($1, $2, $3, $4)'
            USING p_instance_id, p_new_instance_id, p_reason, p_from_execution_id;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT * FROM __SCHEMA__.taskhub_restart(
            p_instance_id, p_new_instance_id, NULL, p_reason, p_from_execution_id);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_restart_instance(text, text, text, bigint) FROM PUBLIC;
