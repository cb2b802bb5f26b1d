-- A JSON text as jsonb, or NULL when it is not valid JSON.
CREATE FUNCTION __SCHEMA__.taskhub_try_jsonb(p_text text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RETURN p_text::jsonb;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN NULL;
END;
$$;

