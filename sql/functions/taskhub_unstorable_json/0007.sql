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

