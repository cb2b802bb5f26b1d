-- How many [ and { a text holds, strings included: a bound on its nesting
-- (a text deeper than n levels opens at least n + 1). Counted in C by two
-- replace() calls, a quarter of a microsecond for a 250-byte event, so that
-- the exact check runs only for the rare text that could fail it. An SQL
-- expression the planner inlines into the statements that use it.
CREATE FUNCTION __SCHEMA__.taskhub_json_openers(p_text text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT octet_length(p_text) - octet_length(replace(replace(p_text, '[', ''), '{', ''))
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_json_openers(text) FROM PUBLIC;
