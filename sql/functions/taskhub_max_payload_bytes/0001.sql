-- Limits on what one call may store. Generous for real workloads; they keep a
-- runaway caller from writing rows no index or reader can handle.
CREATE FUNCTION __SCHEMA__.taskhub_max_payload_bytes()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 8 * 1024 * 1024 $$;

