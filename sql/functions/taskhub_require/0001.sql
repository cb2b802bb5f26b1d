-- Bad input is refused before anything is written.
CREATE FUNCTION __SCHEMA__.taskhub_require(p_condition boolean, p_message text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_condition IS NOT TRUE THEN
        RAISE EXCEPTION '%', p_message USING ERRCODE = '22023';
    END IF;
END;
$$;

