-- Take the occurrence p_tick of a schedule, as taskhub_fire_schedule_outcome
-- does (a start the hub refuses is counted against its schedule and stops no
-- other): true when this call took the tick; false when it was not due after
-- the latest, the schedule is paused or gone, or its start failed. The
-- scheduler of revision 0027 calls it; later ones call
-- taskhub_fire_schedule_outcome, which says why a start failed.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_fire_schedule(
    p_name        text,
    p_tick        timestamptz,
    p_start       boolean,
    p_traceparent text DEFAULT NULL,
    p_tracestate  text DEFAULT NULL
)
RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT f.out_taken
      FROM __SCHEMA__.taskhub_fire_schedule_outcome(p_name, p_tick, p_start,
                                                    p_traceparent, p_tracestate) AS f
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_fire_schedule(text, timestamp with time zone, boolean, text, text) FROM PUBLIC;
