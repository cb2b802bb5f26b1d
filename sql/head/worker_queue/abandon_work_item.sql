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
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms       bigint;
    v_id           bigint;
    v_locked_until bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.abandon_work_item($1, $2, $3, $4)'
            USING p_lock_token, p_now_ms, p_delay_ms, p_ignore_attempt;
        RETURN;
    END IF;
    IF p_delay_ms < 0 THEN
        RAISE EXCEPTION 'p_delay_ms must not be negative' USING ERRCODE = '22023';
    END IF;
    -- By the id the token names (taskhub_worker_item_of_token); a token
    -- from before 0021 by a read of the queue.
    v_id := __SCHEMA__.taskhub_worker_item_of_token(p_lock_token);
    IF v_id IS NULL THEN
        SELECT q.id INTO v_id FROM __SCHEMA__.worker_queue AS q WHERE q.lock_token = p_lock_token;
    END IF;
    SELECT q.id, q.locked_until INTO v_id, v_locked_until
      FROM __SCHEMA__.worker_queue AS q
     WHERE q.id = v_id AND q.lock_token = p_lock_token;
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
        RAISE EXCEPTION 'Invalid lock token or already acked'
            USING ERRCODE = 'TH001',
                  DETAIL = __SCHEMA__.taskhub_lease_lost_detail(v_locked_until, v_now_ms);
    END IF;

    UPDATE __SCHEMA__.worker_queue AS q
       SET lock_token    = NULL,
           locked_until  = NULL,
           visible_at    = to_timestamp((v_now_ms + coalesce(p_delay_ms, 0)) / 1000.0),
           -- A rank keeps its head start on the new visible_at.
           taskhub_rank  = to_timestamp((v_now_ms + coalesce(p_delay_ms, 0)) / 1000.0)
                           - (q.visible_at - q.taskhub_rank),
           attempt_count = CASE WHEN p_ignore_attempt
                                THEN greatest(0, q.attempt_count - 1)
                                ELSE q.attempt_count END
     WHERE q.id = v_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.abandon_work_item(text, bigint, bigint, boolean) FROM PUBLIC;
