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

-- Why a JSON text could never be handed over by a fetch, or NULL when it can.
-- Only looks for the two problems above; invalid JSON is the runtime's to
-- judge (a fetch hands it over as a string). Cheap for ordinary texts: the
-- exact checks run only when a scan in C finds the telltale characters.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_unstorable_json(p_text text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    c_depth constant integer := __SCHEMA__.taskhub_max_json_depth();
    v_json  jsonb;
BEGIN
    -- \u0000 is an escape only after an even number of backslashes
    -- ("\\u0000" is a backslash followed by the text u0000).
    IF strpos(p_text, '\u0000') > 0 AND p_text ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RETURN 'it holds the JSON escape \u0000 (a NUL character), which PostgreSQL jsonb cannot store';
    END IF;

    -- Deeper than c_depth levels needs at least c_depth opening brackets.
    IF length(p_text) - length(translate(p_text, '[{', '')) < c_depth THEN
        RETURN NULL;
    END IF;
    BEGIN
        v_json := p_text::jsonb;
    EXCEPTION
        WHEN statement_too_complex THEN
            RETURN format('it is nested deeper than %s levels', c_depth);
        WHEN data_exception THEN
            RETURN NULL;
    END;
    -- A value at (zero-based) level c_depth is one level too deep.
    IF jsonb_path_exists(v_json, format('strict $.**{%s}', c_depth)::jsonpath) THEN
        RETURN format('it is nested deeper than %s levels', c_depth);
    END IF;
    RETURN NULL;
END;
$$;

-- p_text itself when a fetch can hand it over; else refused, naming p_what
-- and why (22023). Writes call it only for texts that could fail it.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_storable_json(p_text text, p_what text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_why text := __SCHEMA__.taskhub_unstorable_json(p_text);
BEGIN
    IF v_why IS NOT NULL THEN
        RAISE EXCEPTION '% cannot be stored: %', p_what, v_why USING ERRCODE = '22023';
    END IF;
    RETURN p_text;
END;
$$;

-- A JSON text as jsonb, or NULL when it cannot be one: invalid JSON, a NUL
-- escape, too deep or too large (any data exception or program limit).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_try_jsonb(p_text text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RETURN p_text::jsonb;
EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    RETURN NULL;
END;
$$;
