-- A JSON text as jsonb, or NULL when it cannot be one or the runtime could
-- not decode it: invalid JSON, a NUL escape, nested deeper than
-- taskhub_max_json_depth, too large (any data exception or program limit).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_try_jsonb(p_text text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF __SCHEMA__.taskhub_json_too_deep(p_text) THEN
        RETURN NULL;
    END IF;
    RETURN p_text::jsonb;
EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    RETURN NULL;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_try_jsonb(text) FROM PUBLIC;
