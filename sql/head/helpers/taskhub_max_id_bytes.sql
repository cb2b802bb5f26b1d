-- The longest instance, session or tag id one call may store (bytes).
CREATE FUNCTION __SCHEMA__.taskhub_max_id_bytes()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 1024 $$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_max_id_bytes() FROM PUBLIC;
