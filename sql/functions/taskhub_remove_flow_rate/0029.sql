-- Remove a key's rate limit (a pause or a concurrency limit stays). Returns
-- the rate before (NULL: none). Kept in taskhub_flow_changes.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_remove_flow_rate(
    p_kind   text,
    p_name   text,
    p_reason text DEFAULT NULL
)
RETURNS double precision
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.out_per_second_before
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'remove rate', NULL, NULL, NULL,
                                                p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_remove_flow_rate(text, text, text) FROM PUBLIC;
