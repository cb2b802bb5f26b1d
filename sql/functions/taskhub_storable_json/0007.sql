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

