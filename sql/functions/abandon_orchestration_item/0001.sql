-- Give a lease back: its messages become visible again, now or after
-- p_delay_ms. With p_ignore_attempt the fetch that is being returned does not
-- count towards poisoning. Returns the instance id.
--
-- An unknown token is refused ('Invalid lock token', SQLSTATE TH001). A lease
-- that expired but was not taken over may still be abandoned: that only
-- releases what nobody else holds.
CREATE FUNCTION __SCHEMA__.abandon_orchestration_item(
    p_lock_token     text,
    p_now_ms         bigint,
    p_delay_ms       bigint  DEFAULT NULL,
    p_ignore_attempt boolean DEFAULT false
)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_instance text;
    v_now_ms   bigint;
    v_locked_until bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_delay_ms IS NULL OR p_delay_ms >= 0,
        'p_delay_ms must not be negative');

    SELECT il.instance_id, il.locked_until INTO v_instance, v_locked_until
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_instance IS NOT NULL AND v_locked_until > v_now_ms THEN
        -- Live: only its own holder can be busy with it.
        PERFORM 1 FROM __SCHEMA__.instance_locks AS il
         WHERE il.lock_token = p_lock_token FOR UPDATE;
    ELSIF v_instance IS NOT NULL THEN
        -- Expired: a fetcher may be taking it over right now; never wait for one.
        PERFORM 1 FROM __SCHEMA__.instance_locks AS il
         WHERE il.lock_token = p_lock_token FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_instance IS NULL OR NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token'
            USING ERRCODE = 'TH001',
                  DETAIL = 'No lease holds this token: it was released, or taken over after it expired.';
    END IF;

    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET lock_token    = NULL,
           locked_until  = NULL,
           visible_at    = CASE WHEN p_delay_ms > 0
                                THEN to_timestamp((v_now_ms + p_delay_ms) / 1000.0)
                                ELSE q.visible_at END,
           attempt_count = CASE WHEN p_ignore_attempt
                                THEN greatest(0, q.attempt_count - 1)
                                ELSE q.attempt_count END
     WHERE q.lock_token = p_lock_token;

    DELETE FROM __SCHEMA__.instance_locks AS il WHERE il.lock_token = p_lock_token;
    RETURN v_instance;
END;
$$;
