-- Whether a JSON text nests arrays and objects deeper than
-- taskhub_max_json_depth, as the runtime counts them (a scalar is no level).
-- A text the server cannot parse for its depth is too deep; one that is not
-- JSON at all is not (that is for the cast, or the runtime, to judge).
CREATE FUNCTION __SCHEMA__.taskhub_json_too_deep(p_text text)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    c_depth constant integer := __SCHEMA__.taskhub_max_json_depth();
    v_json  jsonb;
BEGIN
    IF p_text IS NULL OR __SCHEMA__.taskhub_json_openers(p_text) <= c_depth THEN
        RETURN false;
    END IF;
    BEGIN
        v_json := p_text::jsonb;
    EXCEPTION
        WHEN statement_too_complex THEN
            RETURN true;
        WHEN data_exception THEN
            RETURN false;
    END;
    -- The root is level 0: an array or object at level c_depth is the
    -- (c_depth + 1)-th level.
    RETURN jsonb_path_exists(
        v_json,
        format('strict $.**{%s} ? (@.type() == "array" || @.type() == "object")', c_depth)::jsonpath);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_json_too_deep(text) FROM PUBLIC;
