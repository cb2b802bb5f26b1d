-- The same with millisecond precision; returns the new end of the lease (ms).
CREATE FUNCTION __SCHEMA__.taskhub_renew_orchestration_lease(
    p_lock_token text,
    p_now_ms     bigint,
    p_extend_ms  bigint
)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_instance     text;
    v_locked_until bigint;
    v_now_ms       bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_extend_ms > 0, 'p_extend_ms must be positive');

    SELECT lease.instance_id, lease.now_ms INTO v_instance, v_now_ms
      FROM __SCHEMA__.taskhub_lock_orchestration_lease(
               p_lock_token, p_now_ms, 'Lock token invalid, expired, or already released') AS lease;

    v_locked_until := v_now_ms + p_extend_ms;
    UPDATE __SCHEMA__.instance_locks AS il
       SET locked_until = v_locked_until
     WHERE il.instance_id = v_instance;
    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET locked_until = v_locked_until
     WHERE q.lock_token = p_lock_token;
    RETURN v_locked_until;
END;
$$;
