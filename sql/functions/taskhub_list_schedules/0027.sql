-- Every schedule, by name.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_list_schedules()
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
    updated_at    timestamptz
)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.name, s.orchestration, s.version, s.input, s.cron, s.every_ms, s.time_zone,
           s.missed, s.paused, s.last_tick_at, s.created_at, s.updated_at
      FROM __SCHEMA__.taskhub_schedules AS s
     ORDER BY s.name
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_list_schedules() FROM PUBLIC;
