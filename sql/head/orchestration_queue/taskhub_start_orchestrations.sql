-- Start orchestrations, each once, all or none, without steering: the
-- application client's start and start_many of 0027-0028.
-- taskhub_start_steered_orchestrations says what it does; this is it with
-- priority 0 and no labels for every start.
CREATE FUNCTION __SCHEMA__.taskhub_start_orchestrations(
    p_instance_ids text[],
    p_work_items   text[],
    p_visible_at   timestamptz,
    p_traceparent  text DEFAULT NULL,
    p_tracestate   text DEFAULT NULL
)
RETURNS TABLE (out_instance_id text, out_started boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.out_instance_id, s.out_started
      FROM __SCHEMA__.taskhub_start_steered_orchestrations(
               p_instance_ids, p_work_items, p_visible_at, p_traceparent, p_tracestate, NULL) AS s
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_start_orchestrations(text[], text[], timestamp with time zone, text, text) FROM PUBLIC;
