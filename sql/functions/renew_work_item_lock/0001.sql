-- Extend a live worker lease to now + p_extend_secs.
--
-- Only a lease still held (same token, not expired by the clock read after
-- its row lock) is extended; otherwise 'Lock token invalid, expired, or
-- already acked' (SQLSTATE TH001). That error is the worker's signal to stop:
-- the item was acked, taken over after expiry, or cancelled.
CREATE FUNCTION __SCHEMA__.renew_work_item_lock(
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
    PERFORM __SCHEMA__.taskhub_renew_work_item_lease(p_lock_token, p_now_ms, p_extend_secs * 1000);
END;
$$;

