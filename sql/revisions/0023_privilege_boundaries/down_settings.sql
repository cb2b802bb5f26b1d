-- taskhub-pg 0023, downgrade: dead_letter_after_attempts is free text again
-- (its value stays).
ALTER TABLE __SCHEMA__.taskhub_settings
    DROP CONSTRAINT dead_letter_after_attempts_is_a_whole_number_of_2_or_more;
