-- Force-release an instance's orchestration lease (for a holder known to be
-- gone, without waiting for the lease to expire): its messages become ready
-- again and the holder's late ack will be refused. Returns whether a lease
-- was released.
CREATE FUNCTION __SCHEMA__.taskhub_release_orchestration_lease(p_instance_id text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_token text;
BEGIN
    DELETE FROM __SCHEMA__.instance_locks AS il WHERE il.instance_id = p_instance_id
    RETURNING il.lock_token INTO v_token;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET lock_token = NULL, locked_until = NULL
     WHERE q.lock_token = v_token;
    RETURN true;
END;
$$;
