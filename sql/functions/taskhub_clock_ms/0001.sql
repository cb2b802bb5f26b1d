-- taskhub-pg 0001: helpers shared by the procedures.
--
-- They are internal: called from the task-hub procedures, which pin
-- search_path, so they do not pin it again (a SET clause costs every call a
-- GUC save/restore and keeps SQL helpers from being inlined).

-- The one clock of every lease decision: the database server's clock, with the
-- caller's clock as a floor. The floor keeps a lease written here consistent
-- with a caller whose clock runs slightly ahead; the server clock makes a stale
-- caller timestamp (a call that waited, a slow client) harmless. A caller clock
-- far ahead of the server is refused rather than trusted.
CREATE FUNCTION __SCHEMA__.taskhub_clock_ms(p_caller_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_server_ms bigint := (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint;
BEGIN
    IF p_caller_ms > v_server_ms + 300000 THEN
        RAISE EXCEPTION 'p_now_ms (%) is more than 300 s ahead of the database clock (%)',
            p_caller_ms, v_server_ms
            USING ERRCODE = '22023';
    END IF;
    RETURN greatest(v_server_ms, coalesce(p_caller_ms, 0));
END;
$$;

