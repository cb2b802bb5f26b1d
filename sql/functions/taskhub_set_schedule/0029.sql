-- Create a schedule, or change one (its timing, orchestration or input), with
-- no steering: taskhub_set_steered_schedule with priority 0 and no labels
-- (the form of revisions 0027 and 0028, which their clients call). Returns
-- true when it was created.
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
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT __SCHEMA__.taskhub_set_steered_schedule(p_name, p_orchestration, p_input, p_version,
                                                   p_cron, p_every_ms, p_time_zone, p_missed,
                                                   p_now, 0, '{}')
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_schedule(text, text, text, text, text, bigint, text, text, timestamp with time zone) FROM PUBLIC;
