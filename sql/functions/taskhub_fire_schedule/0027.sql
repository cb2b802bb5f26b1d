-- Take the occurrence p_tick of a schedule: start it (p_start) or only
-- record it as skipped (missed after downtime). The schedule's latest tick
-- moves to p_tick only if it is earlier; its row lock makes schedulers that
-- race take turns, and the later ones see the tick taken. The start is made
-- in the same transaction, built here from the schedule (the caller names
-- no orchestration or input), with the instance id
-- 'schedule:<name>:<tick in UTC, ISO 8601>'; a start of that id already made
-- is not repeated (taskhub_start_orchestrations). Returns true when this call
-- took the tick; false when it was not due after the latest (or the schedule
-- is paused or gone).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_fire_schedule(
    p_name        text,
    p_tick        timestamptz,
    p_start       boolean,
    p_traceparent text DEFAULT NULL,
    p_tracestate  text DEFAULT NULL
)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_schedule record;
    v_instance text;
    v_item     text;
BEGIN
    IF p_tick IS NULL OR p_start IS NULL THEN
        RAISE EXCEPTION 'p_tick and p_start must be given' USING ERRCODE = '22023';
    END IF;
    UPDATE __SCHEMA__.taskhub_schedules AS s
       SET last_tick_at = p_tick
     WHERE s.name = p_name
       AND NOT s.paused
       AND s.last_tick_at < p_tick
    RETURNING s.name, s.orchestration, s.version, s.input INTO v_schedule;
    IF NOT FOUND THEN
        RETURN false;
    ELSIF NOT p_start THEN
        RETURN true;
    END IF;
    v_instance := format('schedule:%s:%s', v_schedule.name,
                         to_char(p_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'));
    v_item := format('{"StartOrchestration":{"instance":%s,"orchestration":%s,"input":%s,'
                     '"version":%s,"parent_instance":null,"parent_id":null,"execution_id":1}}',
                     to_json(v_instance), to_json(v_schedule.orchestration),
                     to_json(v_schedule.input), coalesce(to_json(v_schedule.version)::text, 'null'));
    PERFORM __SCHEMA__.taskhub_start_orchestrations(
        ARRAY[v_instance], ARRAY[v_item], clock_timestamp(), p_traceparent, p_tracestate);
    RETURN true;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_fire_schedule(text, timestamp with time zone, boolean, text, text) FROM PUBLIC;
