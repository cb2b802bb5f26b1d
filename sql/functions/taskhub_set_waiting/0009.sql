-- The listener with backend pid p_pid (its LISTEN connection; the worker
-- says so from any connection) is waiting for work (true), or not (false).
-- A worker says true before its last fetch ahead of a wait, so that a message
-- committed after that fetch is announced; taskhub_wake sets it back to
-- false when it wakes the listener.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_waiting(p_pid integer, p_waiting boolean)
RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE __SCHEMA__.taskhub_wakeup_listeners
       SET waiting = coalesce(p_waiting, false)
     WHERE pid = p_pid
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_waiting(integer, boolean) FROM PUBLIC;
