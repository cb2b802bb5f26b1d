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
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_delay_ms IS NULL OR p_delay_ms >= 0,
        'p_delay_ms must not be negative');

    SELECT il.instance_id INTO v_instance
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token'
            USING ERRCODE = 'TH001', DETAIL = 'No lease holds this token; it was released or taken over.';
    END IF;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

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
