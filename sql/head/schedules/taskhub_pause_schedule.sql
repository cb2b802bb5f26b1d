-- Pause a schedule (p_paused true) or resume it. Resumed, it starts only the
-- ticks after p_now: what fell due while it was paused is never started, and
-- its failures are forgotten (the count, the latest error, and the reason the
-- scheduler paused it: taskhub_count_schedule_failure).
-- No such schedule: P0002. Returns whether it was paused before.
CREATE FUNCTION __SCHEMA__.taskhub_pause_schedule(
    p_name   text,
    p_paused boolean,
    p_now    timestamptz
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was boolean;
BEGIN
    IF p_paused IS NULL OR p_now IS NULL THEN
        RAISE EXCEPTION 'p_paused and p_now must be given' USING ERRCODE = '22023';
    END IF;
    SELECT s.paused INTO v_was
      FROM __SCHEMA__.taskhub_schedules AS s
     WHERE s.name = p_name
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule % not found', p_name USING ERRCODE = 'P0002';
    END IF;
    UPDATE __SCHEMA__.taskhub_schedules AS s
       SET paused        = p_paused,
           last_tick_at  = CASE WHEN v_was AND NOT p_paused
                                THEN greatest(s.last_tick_at, p_now)
                                ELSE s.last_tick_at END,
           failures      = CASE WHEN p_paused THEN s.failures ELSE 0 END,
           last_error    = CASE WHEN p_paused THEN s.last_error END,
           paused_reason = CASE WHEN p_paused THEN s.paused_reason END,
           updated_at    = now()
     WHERE s.name = p_name;
    RETURN v_was;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_pause_schedule(text, boolean, timestamp with time zone) FROM PUBLIC;
