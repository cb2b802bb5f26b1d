-- taskhub-pg 0023: a value of dead_letter_after_attempts that is not a whole
-- number of at least 2 is refused (23514, the check's name says the rule),
-- and nothing changes (one statement: Citus forwards a distributed table's DDL).
ALTER TABLE __SCHEMA__.taskhub_settings
    ADD CONSTRAINT dead_letter_after_attempts_is_a_whole_number_of_2_or_more
        CHECK (name <> 'dead_letter_after_attempts'
               OR CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::integer >= 2 ELSE false END);
