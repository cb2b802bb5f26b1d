-- Why a JSON text could never be handed over by a fetch, or NULL when it can.
-- Only looks for the two problems above; invalid JSON is the runtime's to
-- judge (a fetch hands it over as a string). Cheap for ordinary texts: the
-- exact checks run only when a scan in C finds the telltale characters.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_unstorable_json(p_text text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    -- \u0000 is an escape only after an even number of backslashes
    -- ("\\u0000" is a backslash followed by the text u0000).
    IF strpos(p_text, '\u0000') > 0 AND p_text ~ '(^|[^\\])(\\\\)*\\u0000' THEN
        RETURN 'it holds the JSON escape \u0000 (a NUL character), which PostgreSQL jsonb cannot store';
    END IF;
    IF __SCHEMA__.taskhub_json_too_deep(p_text) THEN
        RETURN format('it is nested deeper than %s levels, which the runtime cannot decode',
                      __SCHEMA__.taskhub_max_json_depth());
    END IF;
    RETURN NULL;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_unstorable_json(text) FROM PUBLIC;
