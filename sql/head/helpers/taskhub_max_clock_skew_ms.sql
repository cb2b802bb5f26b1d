-- How far ahead of the server a caller's clock is believed (milliseconds).
CREATE FUNCTION __SCHEMA__.taskhub_max_clock_skew_ms()
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT 1000::bigint $$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_max_clock_skew_ms() FROM PUBLIC;
