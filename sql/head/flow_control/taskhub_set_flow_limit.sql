-- Limit a key to p_max_running items leased at once, over every worker and
-- runtime of the hub: the fetches skip its items while that many hold a
-- lease (taskhub_flow_slots). A lowered limit lets the leased items finish.
-- Returns the limit before (NULL: none). Kept in taskhub_flow_changes.
CREATE FUNCTION __SCHEMA__.taskhub_set_flow_limit(
    p_kind        text,
    p_name        text,
    p_max_running integer,
    p_reason      text DEFAULT NULL
)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.out_max_running_before
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'set limit', p_max_running,
                                                NULL, NULL, p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_flow_limit(text, text, integer, text) FROM PUBLIC;
