-- How many times a message may be handed out before it goes to dead_letters
-- (taskhub_settings.dead_letter_after_attempts, 50 when unset).
--
-- PL/pgSQL rather than SQL: an SQL function that cannot be inlined is planned
-- on every call, which cost each fetch about 50 us; this one's plan is kept
-- for the session. Internal helper.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_dead_letter_cap()
RETURNS integer
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_cap integer;
BEGIN
    SELECT s.value::integer INTO v_cap
      FROM __SCHEMA__.taskhub_settings AS s
     WHERE s.name = 'dead_letter_after_attempts';
    RETURN coalesce(v_cap, 50);
END;
$$;
