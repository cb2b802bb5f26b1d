-- Resume a paused key: its items are handed out again, oldest first, within
-- its limit if it has one. Returns whether it was paused. Kept in
-- taskhub_flow_changes.
CREATE FUNCTION __SCHEMA__.taskhub_resume_flow(
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
      FROM __SCHEMA__.taskhub_change_flow_rule(p_kind, p_name, 'resume', NULL, NULL, NULL,
                                                p_reason) AS c
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_resume_flow(text, text, text) FROM PUBLIC;
