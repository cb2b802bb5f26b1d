-- The deepest nesting of arrays and objects a stored JSON text may have:
-- what the duroxide runtime can decode. Its decoder (serde_json) stops at a
-- recursion limit of 128, so it reads 127 levels of arrays and objects, and a
-- fetch hands a turn's history and messages over as one array, which takes
-- one of them. Measured with the released runtime (duroxide 0.2.2): a history
-- event 126 levels deep is read, one 127 deep fails the whole fetch
-- ("recursion limit exceeded"), on every delivery, and is never poisoned.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_max_json_depth()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 126 $$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_max_json_depth() FROM PUBLIC;
