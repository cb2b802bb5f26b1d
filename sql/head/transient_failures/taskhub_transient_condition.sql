-- The transient condition a failure message names, or NULL.
CREATE FUNCTION __SCHEMA__.taskhub_transient_condition(p_message text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT c.condition
      FROM __SCHEMA__.taskhub_transient_conditions() AS c
     WHERE p_message ~* c.pattern
     LIMIT 1
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_transient_condition(text) FROM PUBLIC;
