-- taskhub-pg 0023: dead_letter_after_attempts becomes a checked whole number
-- of at least 2 (settings_check.sql). A hub that holds another value (on
-- which every fetch that redelivers a message failed, or which dead-lettered
-- a message at its first give-back) gets the default back, with a warning
-- naming the value it had.
DO $settings$
DECLARE
    v_value text;
    v_valid boolean;
BEGIN
    SELECT s.value INTO v_value
      FROM __SCHEMA__.taskhub_settings AS s
     WHERE s.name = 'dead_letter_after_attempts';
    -- (A CASE, so that only a whole number is cast.)
    v_valid := CASE WHEN v_value ~ '^[0-9]{1,9}$' THEN v_value::integer >= 2 ELSE false END;
    IF v_value IS NOT NULL AND NOT v_valid THEN
        RAISE WARNING 'taskhub_settings dead_letter_after_attempts was %, not a whole number of at least 2: set back to its default, 50',
                      quote_literal(v_value);
        UPDATE __SCHEMA__.taskhub_settings AS s
           SET value = '50'
         WHERE s.name = 'dead_letter_after_attempts';
    END IF;
END
$settings$;
