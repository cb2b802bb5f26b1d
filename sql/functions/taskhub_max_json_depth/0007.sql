-- taskhub-pg 0007: what a stored JSON text may hold, so that every fetch can
-- hand it over.
--
-- PostgreSQL's jsonb cannot hold a NUL character, so it refuses the JSON
-- escape \u0000 (22P05), and its parser recurses once per nesting level until
-- the stack limit (54001; about 15,000 levels with the default
-- max_stack_depth of 2 MB, about 1,000 with the smallest, 100 kB). A fetch
-- parses a whole turn at once, so one such row used to make every fetch fail.
-- Writes now refuse both; rows written before are handed over as unreadable
-- (see fetch_orchestration_item).

-- The deepest nesting of arrays and objects a stored JSON text may have.
-- Far above what any runtime writes (serde_json, which the duroxide runtime
-- uses, stops at 128) and far below what the parser can take.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_max_json_depth()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 500 $$;

