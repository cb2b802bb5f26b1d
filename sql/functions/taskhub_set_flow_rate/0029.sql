-- Let a key's items be handed out at most p_per_second a second on average,
-- with bursts up to p_burst (NULL: one second's worth), over every worker and
-- runtime of the hub: a fetch takes a token or skips the key, never waiting
-- (taskhub_flow_buckets). Returns the rate before (NULL: none). Kept in
-- taskhub_flow_changes.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_flow_rate(
    p_kind       text,
    p_name       text,
    p_per_second double precision,
    p_burst      integer DEFAULT NULL,
    p_reason     text DEFAULT NULL
)
RETURNS double precision
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.out_per_second_before
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'set rate', NULL, p_per_second,
                                                p_burst, p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_flow_rate(text, text, double precision, integer, text) FROM PUBLIC;
