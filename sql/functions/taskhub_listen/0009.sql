-- Register the calling connection as a listener for work on p_queue, and
-- return the channel to LISTEN to. Rows of connections that are gone are
-- removed on the way, so a crashed worker leaves nothing behind for long.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_listen(p_queue text)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_queue IS NULL OR p_queue NOT IN ('orchestrator', 'worker') THEN
        RAISE EXCEPTION 'p_queue must be orchestrator or worker' USING ERRCODE = '22023';
    END IF;
    DELETE FROM __SCHEMA__.taskhub_wakeup_listeners AS l
     WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = l.pid);
    INSERT INTO __SCHEMA__.taskhub_wakeup_listeners AS l (pid, queue)
    VALUES (pg_backend_pid(), p_queue)
    ON CONFLICT (pid) DO UPDATE SET queue = EXCLUDED.queue, waiting = false;
    RETURN __SCHEMA__.taskhub_wakeup_channel();
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_listen(text) FROM PUBLIC;
