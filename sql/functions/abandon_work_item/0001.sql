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
    v_now_ms       bigint;
    v_id           bigint;
    v_locked_until bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_delay_ms IS NULL OR p_delay_ms >= 0,
        'p_delay_ms must not be negative');
    SELECT q.id, q.locked_until INTO v_id, v_locked_until
      FROM __SCHEMA__.worker_queue AS q
     WHERE q.lock_token = p_lock_token;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_id IS NOT NULL AND v_locked_until > v_now_ms THEN
        -- Live: only its own holder can be busy with it.
        SELECT q.id INTO v_id FROM __SCHEMA__.worker_queue AS q
         WHERE q.id = v_id AND q.lock_token = p_lock_token FOR UPDATE;
    ELSIF v_id IS NOT NULL THEN
        -- Expired: a fetcher may be taking it over right now; never wait for one.
        SELECT q.id INTO v_id FROM __SCHEMA__.worker_queue AS q
         WHERE q.id = v_id AND q.lock_token = p_lock_token FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_id IS NULL THEN
        RAISE EXCEPTION 'Invalid lock token or already acked' USING ERRCODE = 'TH001';
    END IF;

    UPDATE __SCHEMA__.worker_queue AS q
       SET lock_token    = NULL,
           locked_until  = NULL,
           visible_at    = to_timestamp((v_now_ms + coalesce(p_delay_ms, 0)) / 1000.0),
           attempt_count = CASE WHEN p_ignore_attempt
                                THEN greatest(0, q.attempt_count - 1)
                                ELSE q.attempt_count END
     WHERE q.id = v_id;
END;
$$;
