-- The start a tick of a schedule makes: its instance id,
-- 'schedule:<name>:<tick in UTC, ISO 8601>', and its StartOrchestration work
-- item, as taskhub_fire_schedule_outcome queues them. Written once, so that
-- taskhub_set_schedule measures the very text a fire would queue: a schedule
-- it stores fits the start's limits at every tick (the id has the same length
-- whatever the tick).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_schedule_start(
    p_name          text,
    p_orchestration text,
    p_version       text,
    p_input         text,
    p_tick          timestamptz,
    OUT out_instance_id text,
    OUT out_work_item   text
)
RETURNS record
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT t.id,
           format('{"StartOrchestration":{"instance":%s,"orchestration":%s,"input":%s,'
                  '"version":%s,"parent_instance":null,"parent_id":null,"execution_id":1}}',
                  to_json(t.id), to_json(p_orchestration), to_json(p_input),
                  coalesce(to_json(p_version)::text, 'null'))
      FROM (SELECT format('schedule:%s:%s', p_name,
                          to_char(p_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                   AS id) AS t
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_schedule_start(text, text, text, text, timestamp with time zone) FROM PUBLIC;
