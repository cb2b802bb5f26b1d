-- Locking a lease for ack, renew and abandon, without ever queueing behind a
-- fetcher. The liveness test is part of the locking query: a row whose lease
-- has expired fails it on the statement's snapshot and is neither locked nor
-- waited for, and fetchers only ever lock expired leases (to take them over).
-- So the only possible wait is behind the holder's own concurrent renew, ack
-- or abandon; after it, the lease is judged again with the clock read after
-- the lock was granted. (Internal helpers: they run inside the procedures'
-- pinned search_path.)

CREATE FUNCTION __SCHEMA__.taskhub_lock_orchestration_lease(
    p_lock_token     text,
    p_now_ms         bigint,
    p_lost_message   text,
    OUT instance_id  text,
    OUT locked_until bigint,
    OUT now_ms       bigint
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_seen_until bigint;
BEGIN
    now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    SELECT il.instance_id, il.locked_until INTO instance_id, locked_until
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token
       AND il.locked_until > now_ms
       FOR UPDATE;
    now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF instance_id IS NOT NULL AND locked_until > now_ms THEN
        RETURN;
    END IF;

    SELECT il.locked_until INTO v_seen_until
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token;
    RAISE EXCEPTION '%', p_lost_message
        USING ERRCODE = 'TH001',
              DETAIL = CASE WHEN v_seen_until IS NULL
                            THEN 'No lease holds this token: it was released, or taken over after it expired.'
                            ELSE format('The lease expired %s ms ago.', now_ms - v_seen_until) END;
END;
$$;

