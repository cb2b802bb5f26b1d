-- Count a failed fire of a schedule: one more failure in a row, p_error kept
-- as the latest (its first 1000 characters), and the schedule paused once it
-- has failed schedule_pause_after_failures times in a row (taskhub_settings;
-- 5 when the row is missing), with the reason in paused_reason. Called by
-- taskhub_fire_schedule when a start is refused, and by a scheduler that
-- could not work out a schedule's ticks (a cron expression or time zone it
-- cannot read). A successful start, a change (taskhub_set_schedule) and a
-- resume set the count back to 0. No such schedule: P0002. Returns whether
-- the schedule is paused now.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_count_schedule_failure(p_name text, p_error text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_error constant text := left(p_error, 1000);
    v_limit  integer;
    v_paused boolean;
BEGIN
    IF p_error IS NULL OR p_error = '' THEN
        RAISE EXCEPTION 'p_error must be a non-empty text' USING ERRCODE = '22023';
    END IF;
    -- A whole number of at least 1, else the default (the table has no
    -- check for it; a CASE: only a whole number is cast), so that counting a
    -- failure cannot fail on it.
    SELECT CASE WHEN s.value ~ '^[0-9]{1,9}$' THEN s.value::integer END INTO v_limit
      FROM __SCHEMA__.taskhub_settings AS s
     WHERE s.name = 'schedule_pause_after_failures';
    v_limit := CASE WHEN v_limit >= 1 THEN v_limit ELSE 5 END;
    UPDATE __SCHEMA__.taskhub_schedules AS s
       SET failures      = s.failures + 1,
           last_error    = c_error,
           paused        = s.paused OR s.failures + 1 >= v_limit,
           paused_reason = CASE WHEN NOT s.paused AND s.failures + 1 >= v_limit
                                THEN format('failed %s times in a row (schedule_pause_after_failures);'
                                            ' the latest: %s', s.failures + 1, c_error)
                                ELSE s.paused_reason END,
           updated_at    = CASE WHEN NOT s.paused AND s.failures + 1 >= v_limit
                                THEN now() ELSE s.updated_at END
     WHERE s.name = p_name
    RETURNING s.paused INTO v_paused;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule % not found', p_name USING ERRCODE = 'P0002';
    END IF;
    RETURN v_paused;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_count_schedule_failure(text, text) FROM PUBLIC;
