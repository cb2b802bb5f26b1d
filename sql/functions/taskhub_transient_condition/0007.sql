-- The transient condition a failure message names, or NULL.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_condition(p_message text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT c.condition
      FROM __SCHEMA__.taskhub_transient_conditions() AS c
     WHERE p_message ~* c.pattern
     LIMIT 1
$$;

