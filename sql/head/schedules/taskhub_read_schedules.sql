-- Every schedule, by name, with what taskhub_list_schedules gives and its
-- failed fires (revision 0029): how many in a row, the latest one's error,
-- and why the scheduler paused it (NULL: it did not;
-- taskhub_count_schedule_failure), and the priority and labels its ticks
-- start with, and the latest tick it started with that tick's instance.
-- taskhub_list_schedules keeps its result
-- type for clients of revision 0027, which may have it prepared.
CREATE FUNCTION __SCHEMA__.taskhub_read_schedules()
RETURNS TABLE (
    name          text,
    orchestration text,
    version       text,
    input         text,
    cron          text,
    every_ms      bigint,
    time_zone     text,
    missed        text,
    paused        boolean,
    last_tick_at  timestamptz,
    created_at    timestamptz,
    updated_at    timestamptz,
    failures      integer,
    last_error    text,
    paused_reason text,
    priority      smallint,
    labels        text[],
    last_started_tick timestamptz,
    last_instance_id  text
)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.name, s.orchestration, s.version, s.input, s.cron, s.every_ms, s.time_zone,
           s.missed, s.paused, s.last_tick_at, s.created_at, s.updated_at,
           s.failures, s.last_error, s.paused_reason, s.priority, s.labels,
           s.last_started_tick, s.last_instance_id
      FROM __SCHEMA__.taskhub_schedules AS s
     ORDER BY s.name
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_read_schedules() FROM PUBLIC;
