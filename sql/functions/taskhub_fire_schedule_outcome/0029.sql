-- Take the occurrence p_tick of a schedule: start it (p_start) or only
-- record it as skipped (missed after downtime), and say how it went. The
-- schedule's latest tick moves to p_tick only if it is earlier; its row lock
-- makes schedulers that race take turns, and the later ones see the tick
-- taken. The start is made in the same transaction, built here from the
-- schedule (the caller names no orchestration or input;
-- taskhub_schedule_start), with the instance id
-- 'schedule:<name>:<tick in UTC, ISO 8601>'; a start of that id already made
-- is not repeated (taskhub_start_steered_orchestrations, with the
-- schedule's priority and labels).
--
-- One schedule cannot stop another (revision 0029). The start runs in a
-- subtransaction of its own: when the hub refuses it (too large, a
-- conflicting instance: anything but a passing condition of the server), the
-- refusal is caught, the start undone, the tick left due (the next pass tries
-- it again), the failure counted (taskhub_count_schedule_failure, which
-- pauses the schedule after schedule_pause_after_failures in a row), and the
-- call returns normally: a caller that fires several schedules in one
-- transaction, or in one statement, keeps the others' starts. A passing
-- condition (taskhub_transient_sqlstate: a timeout, a deadlock, a lost
-- connection) is raised as it is and counts for nothing. A start made sets
-- the count back to 0.
--
-- One row: out_taken, true when this call took the tick (started or skipped
-- it), false when it was not due after the latest, the schedule is paused or
-- gone, or the start failed; out_failure, why the start failed, else NULL;
-- out_paused, whether that failure paused the schedule.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_fire_schedule_outcome(
    p_name        text,
    p_tick        timestamptz,
    p_start       boolean,
    p_traceparent text DEFAULT NULL,
    p_tracestate  text DEFAULT NULL
)
RETURNS TABLE (out_taken boolean, out_failure text, out_paused boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schedule record;
    v_start    record;
    v_state    text;
    v_message  text;
    v_instance text;    -- the tick's instance, when this call starts it
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left. First,
    -- before the schedule's row: a fire that held the row while it waited
    -- at the gate in its start would hold up a migration that locks
    -- taskhub_schedules after closing the gate.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE
            'SELECT * FROM __SCHEMA__.taskhub_fire_schedule_outcome($1, $2, $3, $4, $5)'
            USING p_name, p_tick, p_start, p_traceparent, p_tracestate;
        RETURN;
    END IF;
    IF p_tick IS NULL OR p_start IS NULL THEN
        RAISE EXCEPTION 'p_tick and p_start must be given' USING ERRCODE = '22023';
    END IF;
    out_taken := false;
    out_paused := false;
    -- A scheduler that raced this one and took the tick first is waited
    -- for; the row it leaves is read again, and the tick is no longer due.
    SELECT s.name, s.orchestration, s.version, s.input, s.priority, s.labels
      INTO v_schedule
      FROM __SCHEMA__.taskhub_schedules AS s
     WHERE s.name = p_name
       AND NOT s.paused
       AND s.last_tick_at < p_tick
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_start THEN
        BEGIN
            SELECT * INTO v_start
              FROM __SCHEMA__.taskhub_schedule_start(v_schedule.name, v_schedule.orchestration,
                                                     v_schedule.version, v_schedule.input, p_tick);
            v_instance := v_start.out_instance_id;
            -- With the schedule's steering (revision 0029), when it has any.
            PERFORM __SCHEMA__.taskhub_start_steered_orchestrations(
                ARRAY[v_start.out_instance_id], ARRAY[v_start.out_work_item], clock_timestamp(),
                p_traceparent, p_tracestate,
                CASE WHEN v_schedule.priority > 0 OR cardinality(v_schedule.labels) > 0
                     THEN jsonb_build_array(jsonb_build_object(
                              'priority', v_schedule.priority,
                              'labels', to_jsonb(v_schedule.labels))) END);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            IF __SCHEMA__.taskhub_transient_sqlstate(v_state) THEN
                RAISE;
            END IF;
            out_failure := format('tick %s: %s %s',
                                  to_char(p_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
                                  v_state, v_message);
            out_paused := __SCHEMA__.taskhub_count_schedule_failure(p_name, out_failure);
            RETURN NEXT;
            RETURN;
        END;
    END IF;

    UPDATE __SCHEMA__.taskhub_schedules AS s
       SET last_tick_at = p_tick,
           last_started_tick = CASE WHEN p_start THEN p_tick ELSE s.last_started_tick END,
           last_instance_id  = CASE WHEN p_start THEN v_instance ELSE s.last_instance_id END,
           failures     = CASE WHEN p_start THEN 0 ELSE s.failures END,
           last_error   = CASE WHEN p_start THEN NULL ELSE s.last_error END
     WHERE s.name = p_name;
    out_taken := true;
    RETURN NEXT;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_fire_schedule_outcome(text, timestamp with time zone, boolean, text, text) FROM PUBLIC;
