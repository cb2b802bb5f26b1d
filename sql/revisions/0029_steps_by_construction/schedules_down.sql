-- taskhub-pg 0029, downgrade: the schedules' failure and steering columns, their setting,
-- and the privilege rows of the functions the migration drops. Dropping a
-- column changes the catalog alone (no rewrite).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function'
   AND object_name IN ('taskhub_fire_schedule_outcome', 'taskhub_read_schedules',
                       'taskhub_count_schedule_failure', 'taskhub_set_steered_schedule');
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_read_schedules';

DELETE FROM __SCHEMA__.taskhub_settings WHERE name = 'schedule_pause_after_failures';

ALTER TABLE __SCHEMA__.taskhub_schedules
    DROP COLUMN failures,
    DROP COLUMN last_error,
    DROP COLUMN paused_reason,
    DROP COLUMN priority,
    DROP COLUMN labels,
    DROP COLUMN last_started_tick,
    DROP COLUMN last_instance_id;
