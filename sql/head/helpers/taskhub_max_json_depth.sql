-- The deepest nesting of arrays and objects a stored JSON text may have.
-- Far above what any runtime writes (serde_json, which the duroxide runtime
-- uses, stops at 128) and far below what the parser can take.
CREATE FUNCTION __SCHEMA__.taskhub_max_json_depth()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 500 $$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_max_json_depth() FROM PUBLIC;
