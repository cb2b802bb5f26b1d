CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_clock_ms(p_caller_ms bigint)
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
