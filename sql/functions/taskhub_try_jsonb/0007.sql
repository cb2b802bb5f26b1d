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
