-- Remove a key's concurrency limit (a pause stays). Returns the limit
-- before (NULL: none). Kept in taskhub_flow_changes.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_remove_flow_limit(
    p_kind   text,
    p_name   text,
    p_reason text DEFAULT NULL
)
RETURNS integer
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.out_max_running_before
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'remove limit', NULL, NULL, NULL,
                                                p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_remove_flow_limit(text, text, text) FROM PUBLIC;
