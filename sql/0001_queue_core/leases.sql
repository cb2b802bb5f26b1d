-- Locking a lease for ack, renew and abandon, without ever queueing behind a
-- fetcher. Fetchers row-lock only leases that have expired (to take them
-- over), so the lease is first judged without a lock: a lease that is gone or
-- expired fails at once. Only a live lease is then locked, where the only
-- possible wait is behind its own holder's concurrent renew, ack or abandon.
-- It is judged again, with the clock read after the lock was granted.

CREATE FUNCTION __SCHEMA__.taskhub_lock_orchestration_lease(
    p_lock_token     text,
    p_now_ms         bigint,
    p_lost_message   text,
    OUT instance_id  text,
    OUT locked_until bigint,
    OUT now_ms       bigint
)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Pass 1 judges the lease without a lock; pass 2 locks it and judges again.
    FOR v_pass IN 1 .. 2 LOOP
        IF v_pass = 1 THEN
            SELECT il.instance_id, il.locked_until INTO instance_id, locked_until
              FROM __SCHEMA__.instance_locks AS il
             WHERE il.lock_token = p_lock_token;
        ELSE
            SELECT il.instance_id, il.locked_until INTO instance_id, locked_until
              FROM __SCHEMA__.instance_locks AS il
             WHERE il.lock_token = p_lock_token
               FOR UPDATE;
        END IF;
        now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        IF instance_id IS NULL THEN
            RAISE EXCEPTION '%', p_lost_message
                USING ERRCODE = 'TH001',
                      DETAIL = 'No lease holds this token: it was released, or taken over after it expired.';
        END IF;
        IF locked_until <= now_ms THEN
            RAISE EXCEPTION '%', p_lost_message
                USING ERRCODE = 'TH001',
                      DETAIL = format('The lease on instance %s expired %s ms ago.',
                                      instance_id, now_ms - locked_until);
        END IF;
    END LOOP;
END;
$$;

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
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Pass 1 judges the lease without a lock; pass 2 locks it and judges again.
    FOR v_pass IN 1 .. 2 LOOP
        IF v_pass = 1 THEN
            SELECT q.id, q.session_id, q.locked_until INTO item_id, session_id, locked_until
              FROM __SCHEMA__.worker_queue AS q
             WHERE q.lock_token = p_lock_token;
        ELSE
            SELECT q.id, q.session_id, q.locked_until INTO item_id, session_id, locked_until
              FROM __SCHEMA__.worker_queue AS q
             WHERE q.id = item_id
               AND q.lock_token = p_lock_token
               FOR UPDATE;
        END IF;
        now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        IF item_id IS NULL THEN
            RAISE EXCEPTION '%', p_lost_message
                USING ERRCODE = 'TH001',
                      DETAIL = 'No worker item holds this token: it was acked, cancelled, or taken over after it expired.';
        END IF;
        IF locked_until <= now_ms THEN
            RAISE EXCEPTION '%', p_lost_message
                USING ERRCODE = 'TH001',
                      DETAIL = format('The lease on worker item %s expired %s ms ago.',
                                      item_id, now_ms - locked_until);
        END IF;
    END LOOP;
END;
$$;
