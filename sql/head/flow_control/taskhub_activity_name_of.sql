-- The activity's name in a worker item's text, NULL where the text is not an
-- ActivityExecute (never an error: one bad row must not fail a fetch).
-- Only for rows written without taskhub_activity_name.
CREATE FUNCTION __SCHEMA__.taskhub_activity_name_of(p_work_item text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT __SCHEMA__.taskhub_try_jsonb(p_work_item) -> 'ActivityExecute' ->> 'name'
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_activity_name_of(text) FROM PUBLIC;
