-- Pause a key (kind 'activity': an activity's name): the fetches hand out
-- none of its items until it is resumed; what is leased already finishes.
-- Returns whether it was paused before. Kept in taskhub_flow_changes.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_pause_flow(
    p_kind   text,
    p_name   text,
    p_reason text DEFAULT NULL
)
RETURNS boolean
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(c.out_paused_before, false)
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'pause', NULL, NULL, NULL,
                                                p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_pause_flow(text, text, text) FROM PUBLIC;
