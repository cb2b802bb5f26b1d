CREATE FUNCTION __SCHEMA__.taskhub_max_id_bytes()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 1024 $$;

