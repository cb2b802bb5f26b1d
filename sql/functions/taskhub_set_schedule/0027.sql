-- Create a schedule, or change one (its timing, orchestration or input); its
-- ticks start after p_now (the scheduler's clock): no occurrence before it is
-- started. A changed schedule keeps its latest tick. The cron expression is
-- checked by the client that writes it (it parses it the way the scheduler
-- does); here only that it is given. Returns true when it was created.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_schedule(
    p_name          text,
    p_orchestration text,
    p_input         text,
    p_version       text,
    p_cron          text,
    p_every_ms      bigint,
    p_time_zone     text,
    p_missed        text,
    p_now           timestamptz
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_created boolean;
BEGIN
    IF p_name IS NULL OR p_name = '' OR octet_length(p_name) > 200 OR strpos(p_name, ':') > 0 THEN
        RAISE EXCEPTION 'p_name must be a text of 1 to 200 bytes without '':''' USING ERRCODE = '22023';
    ELSIF p_orchestration IS NULL OR p_orchestration = '' THEN
        RAISE EXCEPTION 'p_orchestration must be a non-empty text' USING ERRCODE = '22023';
    ELSIF (p_cron IS NULL) = (p_every_ms IS NULL) THEN
        RAISE EXCEPTION 'give either p_cron or p_every_ms' USING ERRCODE = '22023';
    ELSIF p_every_ms < 1000 OR p_every_ms % 1000 <> 0 THEN
        RAISE EXCEPTION 'p_every_ms must be whole seconds, at least 1000' USING ERRCODE = '22023';
    ELSIF p_missed IS NULL OR p_missed NOT IN ('skip', 'once') THEN
        RAISE EXCEPTION 'p_missed must be skip or once' USING ERRCODE = '22023';
    ELSIF p_now IS NULL THEN
        RAISE EXCEPTION 'p_now must be given' USING ERRCODE = '22023';
    ELSIF NOT EXISTS (SELECT 1 FROM pg_timezone_names AS z WHERE z.name = p_time_zone) THEN
        RAISE EXCEPTION 'p_time_zone % is no time zone this server knows', p_time_zone
            USING ERRCODE = '22023';
    ELSIF __SCHEMA__.taskhub_try_jsonb(coalesce(p_input, 'null')) IS NULL
          AND coalesce(p_input, 'null') <> 'null' THEN
        RAISE EXCEPTION 'p_input must be JSON text' USING ERRCODE = '22023';
    END IF;
    INSERT INTO __SCHEMA__.taskhub_schedules AS s
           (name, orchestration, version, input, cron, every_ms, time_zone, missed, last_tick_at)
    VALUES (p_name, p_orchestration, p_version, coalesce(p_input, 'null'), p_cron, p_every_ms,
            p_time_zone, p_missed, p_now)
    ON CONFLICT (name) DO UPDATE
       SET orchestration = EXCLUDED.orchestration,
           version       = EXCLUDED.version,
           input         = EXCLUDED.input,
           cron          = EXCLUDED.cron,
           every_ms      = EXCLUDED.every_ms,
           time_zone     = EXCLUDED.time_zone,
           missed        = EXCLUDED.missed,
           updated_at    = now()
    RETURNING (xmax = 0) INTO v_created;
    RETURN v_created;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_schedule(text, text, text, text, text, bigint, text, text, timestamp with time zone) FROM PUBLIC;
