CREATE FUNCTION __SCHEMA__.taskhub_lock_worker_lease(
    p_lock_token     text,
    p_now_ms         bigint,
    p_lost_message   text,
    OUT item_id      bigint,
    OUT session_id   text,
    OUT locked_until bigint,
    OUT now_ms       bigint
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_seen_until bigint;
BEGIN
    now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    SELECT q.id, q.session_id, q.locked_until INTO item_id, session_id, locked_until
      FROM __SCHEMA__.worker_queue AS q
     WHERE q.lock_token = p_lock_token
       AND q.locked_until > now_ms
       FOR UPDATE;
    now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF item_id IS NOT NULL AND locked_until > now_ms THEN
        RETURN;
    END IF;

    SELECT q.locked_until INTO v_seen_until
      FROM __SCHEMA__.worker_queue AS q
     WHERE q.lock_token = p_lock_token;
    RAISE EXCEPTION '%', p_lost_message
        USING ERRCODE = 'TH001',
              DETAIL = CASE WHEN v_seen_until IS NULL
                            THEN 'No worker item holds this token: it was acked, cancelled, or taken over after it expired.'
                            ELSE format('The lease expired %s ms ago.', now_ms - v_seen_until) END;
END;
$$;
