-- taskhub-pg 0007 downgrade: the shield's table and setting go; the
-- functions were put back from their released files before this runs.
ALTER TABLE __SCHEMA__.taskhub_settings
    DROP CONSTRAINT taskhub_settings_transient_failure_policy_check;
DELETE FROM __SCHEMA__.taskhub_settings WHERE name = 'transient_failure_policy';
DROP TABLE __SCHEMA__.shielded_failures;
