-- Lock a lease for ack, renew or abandon without ever queueing behind a
-- fetcher. The liveness test is part of the locking query: a row whose lease
-- has expired fails it on the statement's snapshot and is neither locked nor
-- waited for (fetchers only ever lock expired leases, to take them over). So
-- the only possible wait is behind the holder's own concurrent renew, ack or
-- abandon; after it, the lease is judged again by the clock read after the
-- lock was granted. A lease that fails is refused with p_lost_message
-- (TH001) and a detail saying why.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_lock_worker_lease(
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
              DETAIL = __SCHEMA__.taskhub_lease_lost_detail(v_seen_until, now_ms);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_lock_worker_lease(text, bigint, text) FROM PUBLIC;
