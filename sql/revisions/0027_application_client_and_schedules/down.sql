-- taskhub-pg 0027, downgrade: the privilege rows of the application client
-- and of schedules, and the schedules (the functions are dropped by the
-- migration).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function'
   AND object_name IN ('taskhub_start_orchestrations', 'taskhub_cancel_instance',
                       'taskhub_raise_event', 'taskhub_set_schedule', 'taskhub_pause_schedule',
                       'taskhub_remove_schedule', 'taskhub_list_schedules',
                       'taskhub_fire_schedule');
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_name IN ('taskhub_pause_schedule', 'taskhub_remove_schedule',
                       'taskhub_list_schedules', 'taskhub_schedules');
DROP TABLE __SCHEMA__.taskhub_schedules;
