-- Extend a live orchestration lease to now + p_extend_secs.
--
-- Only a lease that is still held (same token, not expired by the clock read
-- after its row lock) is extended; anything else fails at once with
-- 'Lock token invalid, expired, or already released' (SQLSTATE TH001).
CREATE FUNCTION __SCHEMA__.renew_orchestration_item_lock(
    p_lock_token  text,
    p_now_ms      bigint,
    p_extend_secs bigint
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_extend_secs > 0, 'p_extend_secs must be positive');
    PERFORM __SCHEMA__.taskhub_renew_orchestration_lease(p_lock_token, p_now_ms, p_extend_secs * 1000);
END;
$$;

