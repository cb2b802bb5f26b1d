-- Give a worker item back: unlock it and make it visible now or after
-- p_delay_ms. With p_ignore_attempt the returned fetch does not count towards
-- poisoning. An unknown token is refused ('Invalid lock token or already
-- acked', SQLSTATE TH001).
CREATE FUNCTION __SCHEMA__.abandon_work_item(
    p_lock_token     text,
    p_now_ms         bigint,
    p_delay_ms       bigint  DEFAULT NULL,
    p_ignore_attempt boolean DEFAULT false
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_delay_ms IS NULL OR p_delay_ms >= 0,
        'p_delay_ms must not be negative');
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

    UPDATE __SCHEMA__.worker_queue AS q
       SET lock_token    = NULL,
           locked_until  = NULL,
           visible_at    = to_timestamp((v_now_ms + coalesce(p_delay_ms, 0)) / 1000.0),
           attempt_count = CASE WHEN p_ignore_attempt
                                THEN greatest(0, q.attempt_count - 1)
                                ELSE q.attempt_count END
     WHERE q.lock_token = p_lock_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token or already acked' USING ERRCODE = 'TH001';
    END IF;
END;
$$;
