-- priority_aging_ms (taskhub_settings): the head start of priority 9. A value
-- out of range (taskhub-pg check names it) is read as its default.
CREATE FUNCTION __SCHEMA__.taskhub_priority_aging_ms()
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT CASE WHEN s.value ~ '^[0-9]{1,9}$' AND s.value::integer <= 86400000
                                 THEN s.value::integer END
                       FROM __SCHEMA__.taskhub_settings AS s
                      WHERE s.name = 'priority_aging_ms'),
                    300000)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_priority_aging_ms() FROM PUBLIC;
