-- taskhub-pg 0029: schedule_pause_after_failures, how many failed fires in a
-- row pause a schedule (taskhub_count_schedule_failure), a whole number of at
-- least 1 (23514 otherwise, the check's name says the rule). The row first:
-- the check is then validated against every row, this one included (one
-- statement each: Citus forwards a distributed table's DDL).
INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('schedule_pause_after_failures', '5',
        'A schedule whose fire fails this many times in a row (its start refused: too large, '
        'a conflicting instance, a cron expression or time zone the scheduler cannot read) is '
        'paused, with the reason in taskhub-pg schedule list and on the dashboard; the other '
        'schedules keep firing. A transient failure (a timeout, a lost connection) does not count.')
ON CONFLICT (name) DO NOTHING;

ALTER TABLE __SCHEMA__.taskhub_settings
    ADD CONSTRAINT schedule_pause_after_failures_is_a_whole_number_of_1_or_more
        CHECK (name <> 'schedule_pause_after_failures'
               OR CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::integer >= 1 ELSE false END);
