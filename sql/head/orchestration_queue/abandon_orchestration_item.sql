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
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_instance text;
    v_now_ms   bigint;
    v_locked_until bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        DECLARE
            v_result text;
        BEGIN
            EXECUTE 'SELECT __SCHEMA__.abandon_orchestration_item($1, $2, $3, $4)' INTO v_result
                USING p_lock_token, p_now_ms, p_delay_ms, p_ignore_attempt;
            RETURN v_result;
        END;
    END IF;
    IF p_delay_ms < 0 THEN
        RAISE EXCEPTION 'p_delay_ms must not be negative' USING ERRCODE = '22023';
    END IF;

    -- not by instance: the contract names the lease by its token alone.
    SELECT il.instance_id, il.locked_until INTO v_instance, v_locked_until
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_instance IS NOT NULL AND v_locked_until > v_now_ms THEN
        -- Live: only its own holder can be busy with it.
        PERFORM 1 FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = v_instance AND il.lock_token = p_lock_token FOR UPDATE;
    ELSIF v_instance IS NOT NULL THEN
        -- Expired: a fetcher may be taking it over right now; never wait for one.
        PERFORM 1 FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = v_instance AND il.lock_token = p_lock_token
           FOR UPDATE SKIP LOCKED;
    END IF;
    IF v_instance IS NULL OR NOT FOUND THEN
        RAISE EXCEPTION 'Invalid lock token'
            USING ERRCODE = 'TH001',
                  DETAIL = __SCHEMA__.taskhub_lease_lost_detail(v_locked_until, v_now_ms);
    END IF;

    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET lock_token    = NULL,
           locked_until  = NULL,
           visible_at    = CASE WHEN p_delay_ms > 0
                                THEN to_timestamp((v_now_ms + p_delay_ms) / 1000.0)
                                ELSE q.visible_at END,
           -- A rank keeps its head start on the new visible_at.
           taskhub_rank  = CASE WHEN p_delay_ms > 0
                                THEN to_timestamp((v_now_ms + p_delay_ms) / 1000.0)
                                     - (q.visible_at - q.taskhub_rank)
                                ELSE q.taskhub_rank END,
           attempt_count = CASE WHEN p_ignore_attempt
                                THEN greatest(0, q.attempt_count - 1)
                                ELSE q.attempt_count END
     WHERE q.instance_id = v_instance AND q.lock_token = p_lock_token;

    DELETE FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = v_instance AND il.lock_token = p_lock_token;
    RETURN v_instance;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.abandon_orchestration_item(text, bigint, bigint, boolean) FROM PUBLIC;
