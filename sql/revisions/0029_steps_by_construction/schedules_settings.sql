-- taskhub-pg 0029: schedule_pause_after_failures, how many failed fires in a
-- row pause a schedule (taskhub_count_schedule_failure). A row and no check
-- (sql/head/tables/taskhub_settings.sql says why): an INSERT takes no lock
-- that a fetch would wait for.
INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('schedule_pause_after_failures', '5',
        'A schedule whose fire fails this many times in a row (its start refused: too large, '
        'a conflicting instance, a cron expression or time zone the scheduler cannot read) is '
        'paused, with the reason in taskhub-pg schedule list and on the dashboard; the other '
        'schedules keep firing. A transient failure (a timeout, a lost connection) does not count. '
        'A whole number of at least 1; any other value is read as 5, and taskhub-pg check names it.')
ON CONFLICT (name) DO NOTHING;
