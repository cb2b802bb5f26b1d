-- How far behind the hub's dispatchers are: how many milliseconds the
-- oldest orchestration message that a dispatcher could take right now has
-- waited (visible, unleased, of an instance no turn holds); 0 when there is
-- none. Retention asks before each batch and waits while this is above its
-- busy threshold (taskhub-pg prune --busy-lag).
--
-- It reads as the fetch does, and no further: at most c_look_at messages of
-- the rank's index from the first (the message the fetches take next: by
-- priority, then age), each instance's lease by primary key. Messages waiting behind a turn that holds their instance are not lag
-- (the turn takes them next), so a long turn does not read as a busy hub.
CREATE FUNCTION __SCHEMA__.taskhub_dispatch_lag_ms()
RETURNS bigint
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_bitmapscan = off
AS $$
DECLARE
    c_look_at constant integer := 64;
    v_now_ms  bigint;
    v_now_ts  timestamptz;
    v_row     record;
BEGIN
    v_now_ms := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    v_now_ts := to_timestamp(v_now_ms / 1000.0);
    FOR v_row IN
        SELECT q.instance_id, q.visible_at
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE coalesce(q.taskhub_rank, q.visible_at) <= v_now_ts
           AND CASE WHEN q.visible_at <= v_now_ts THEN true ELSE false END
           AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)
         ORDER BY coalesce(q.taskhub_rank, q.visible_at), q.id + 0
         LIMIT c_look_at
    LOOP
        PERFORM 1
          FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = v_row.instance_id
           AND il.locked_until > v_now_ms;
        IF NOT FOUND THEN
            RETURN greatest((extract(epoch FROM v_now_ts - v_row.visible_at) * 1000)::bigint, 0);
        END IF;
    END LOOP;
    RETURN 0;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_dispatch_lag_ms() FROM PUBLIC;
