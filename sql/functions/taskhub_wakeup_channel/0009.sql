-- The channel on which this task hub announces work that became visible:
-- workers LISTEN to it instead of polling fast. One channel per schema; the
-- name is an identifier of 24 bytes whatever the schema's name. A listener
-- learns it from taskhub_listen.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_wakeup_channel()
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT 'taskhub_' || left(md5('__SCHEMA_NAME__'), 16)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_wakeup_channel() FROM PUBLIC;
