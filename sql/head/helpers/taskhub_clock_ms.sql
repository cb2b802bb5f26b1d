-- The one clock of every lease decision: the database server's clock, with
-- the caller's clock as a floor, believed at most taskhub_max_clock_skew_ms
-- ahead (so a lease written here agrees with a caller slightly ahead, and no
-- lease ends later than the server's now + its timeout + that skew). A stale
-- caller clock is harmless; one more than 300 s ahead is refused.
CREATE FUNCTION __SCHEMA__.taskhub_clock_ms(p_caller_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_server_ms bigint := (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint;
BEGIN
    -- A caller clock this far off is broken, not skewed: refuse it.
    IF p_caller_ms > v_server_ms + 300000 THEN
        RAISE EXCEPTION 'p_now_ms (%) is more than 300 s ahead of the database clock (%)',
            p_caller_ms, v_server_ms
            USING ERRCODE = '22023';
    END IF;
    RETURN greatest(v_server_ms,
                    least(coalesce(p_caller_ms, 0),
                          v_server_ms + __SCHEMA__.taskhub_max_clock_skew_ms()));
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_clock_ms(bigint) FROM PUBLIC;
