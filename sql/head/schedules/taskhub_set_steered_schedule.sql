-- Create a schedule, or change one (its timing, orchestration, input or
-- steering), as taskhub_set_schedule does, with the priority and labels each
-- tick's instance starts with (revision 0029, docs/flow-control.md): a
-- priority from 0 to 9, labels 'key=value' as taskhub_check_steering takes
-- them (refused in one line, 22023, before anything is written). A change
-- sets the steering given: taskhub_set_schedule's, none.
--
-- Its ticks start after p_now (the scheduler's clock): no occurrence before it is
-- started. A changed schedule keeps its latest tick, and its count of failed
-- fires goes back to 0 (a paused one stays paused until resumed). The cron
-- expression is checked by the client that writes it (it parses it the way
-- the scheduler does); here only that it is given. Returns true when it was
-- created.
--
-- A schedule stored here can be started at every tick (revision 0029): it
-- is held to the start's own limits before anything is written. Its names,
-- version and cron expression are at most taskhub_max_id_bytes long (54000);
-- its input is JSON that a fetch can hand over (taskhub_unstorable_json:
-- 22023); and the StartOrchestration a tick makes (taskhub_schedule_start,
-- the text a fire queues) is at most taskhub_max_payload_bytes (54000), as
-- enqueue_orchestrator_work would refuse it at every fire otherwise.
CREATE FUNCTION __SCHEMA__.taskhub_set_steered_schedule(
    p_name          text,
    p_orchestration text,
    p_input         text,
    p_version       text,
    p_cron          text,
    p_every_ms      bigint,
    p_time_zone     text,
    p_missed        text,
    p_now           timestamptz,
    p_priority      integer,
    p_labels        text[]
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_id      constant integer := __SCHEMA__.taskhub_max_id_bytes();
    c_max_payload constant integer := __SCHEMA__.taskhub_max_payload_bytes();
    c_input       constant text := coalesce(p_input, 'null');
    v_why         text;
    v_created     boolean;
    v_labels      text[];
BEGIN
    IF p_name IS NULL OR p_name = '' OR octet_length(p_name) > 200 OR strpos(p_name, ':') > 0 THEN
        RAISE EXCEPTION 'p_name must be a text of 1 to 200 bytes without '':''' USING ERRCODE = '22023';
    ELSIF p_orchestration IS NULL OR p_orchestration = '' THEN
        RAISE EXCEPTION 'p_orchestration must be a non-empty text' USING ERRCODE = '22023';
    ELSIF octet_length(p_orchestration) > c_max_id THEN
        RAISE EXCEPTION 'p_orchestration is longer than % bytes', c_max_id USING ERRCODE = '54000';
    ELSIF p_version = '' THEN
        RAISE EXCEPTION 'p_version must be NULL or a non-empty text' USING ERRCODE = '22023';
    ELSIF octet_length(p_version) > c_max_id THEN
        RAISE EXCEPTION 'p_version is longer than % bytes', c_max_id USING ERRCODE = '54000';
    ELSIF (p_cron IS NULL) = (p_every_ms IS NULL) THEN
        RAISE EXCEPTION 'give either p_cron or p_every_ms' USING ERRCODE = '22023';
    ELSIF octet_length(p_cron) > c_max_id THEN
        RAISE EXCEPTION 'p_cron is longer than % bytes', c_max_id USING ERRCODE = '54000';
    ELSIF p_every_ms < 1000 OR p_every_ms % 1000 <> 0 THEN
        RAISE EXCEPTION 'p_every_ms must be whole seconds, at least 1000' USING ERRCODE = '22023';
    ELSIF p_missed IS NULL OR p_missed NOT IN ('skip', 'once') THEN
        RAISE EXCEPTION 'p_missed must be skip or once' USING ERRCODE = '22023';
    ELSIF p_now IS NULL THEN
        RAISE EXCEPTION 'p_now must be given' USING ERRCODE = '22023';
    ELSIF NOT EXISTS (SELECT 1 FROM pg_timezone_names AS z WHERE z.name = p_time_zone) THEN
        RAISE EXCEPTION 'p_time_zone % is no time zone this server knows', left(p_time_zone, 100)
            USING ERRCODE = '22023';
    -- The input's own size first: nothing larger is parsed.
    ELSIF octet_length(c_input) > c_max_payload THEN
        RAISE EXCEPTION 'p_input is larger than % bytes', c_max_payload USING ERRCODE = '54000';
    END IF;
    v_why := __SCHEMA__.taskhub_unstorable_json(c_input);
    IF v_why IS NOT NULL THEN
        RAISE EXCEPTION 'p_input cannot be stored: %', v_why USING ERRCODE = '22023';
    ELSIF __SCHEMA__.taskhub_try_jsonb(c_input) IS NULL AND c_input <> 'null' THEN
        RAISE EXCEPTION 'p_input must be JSON text' USING ERRCODE = '22023';
    ELSIF octet_length((__SCHEMA__.taskhub_schedule_start(p_name, p_orchestration, p_version,
                                                         c_input, p_now)).out_work_item)
          > c_max_payload THEN
        RAISE EXCEPTION 'p_input makes the start of each tick larger than % bytes', c_max_payload
            USING ERRCODE = '54000';
    END IF;
    v_labels := __SCHEMA__.taskhub_check_steering(coalesce(p_priority, 0), p_labels);
    INSERT INTO __SCHEMA__.taskhub_schedules AS s
           (name, orchestration, version, input, cron, every_ms, time_zone, missed, last_tick_at,
            priority, labels)
    VALUES (p_name, p_orchestration, p_version, c_input, p_cron, p_every_ms,
            p_time_zone, p_missed, p_now, coalesce(p_priority, 0), v_labels)
    ON CONFLICT (name) DO UPDATE
       SET orchestration = EXCLUDED.orchestration,
           version       = EXCLUDED.version,
           input         = EXCLUDED.input,
           cron          = EXCLUDED.cron,
           every_ms      = EXCLUDED.every_ms,
           time_zone     = EXCLUDED.time_zone,
           missed        = EXCLUDED.missed,
           priority      = EXCLUDED.priority,
           labels        = EXCLUDED.labels,
           failures      = 0,
           last_error    = NULL,
           updated_at    = now()
    RETURNING (xmax = 0) INTO v_created;
    RETURN v_created;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_steered_schedule(text, text, text, text, text, bigint, text, text, timestamp with time zone, integer, text[]) FROM PUBLIC;
