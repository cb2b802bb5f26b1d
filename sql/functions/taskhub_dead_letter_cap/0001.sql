-- How many times a message may be handed out before it goes to dead_letters.
CREATE FUNCTION __SCHEMA__.taskhub_dead_letter_cap()
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((SELECT value::integer FROM __SCHEMA__.taskhub_settings
                      WHERE name = 'dead_letter_after_attempts'), 50)
$$;
