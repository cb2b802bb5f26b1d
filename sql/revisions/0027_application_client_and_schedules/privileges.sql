-- The application client and schedules: granted to every runtime role and
-- operator role by the migration run (taskhub_refresh_runtime_roles,
-- taskhub_set_operator_privileges). An operator may pause, resume, remove
-- and list schedules, not create or change one: that would start
-- orchestrations of its choice, which no operator function can.
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE',
       'taskhub application client: start and start_many (once, all or none), and cancel and'
       ' raise_event refused for unknown and ended instances'
  FROM unnest(ARRAY['taskhub_start_orchestrations', 'taskhub_cancel_instance',
                    'taskhub_raise_event']) AS name
UNION ALL
SELECT 'function', name, 'EXECUTE', 'taskhub schedules: managed by the application, run by its scheduler'
  FROM unnest(ARRAY['taskhub_set_schedule', 'taskhub_pause_schedule', 'taskhub_remove_schedule',
                    'taskhub_list_schedules', 'taskhub_fire_schedule']) AS name
ON CONFLICT (object_kind, object_name) DO NOTHING;

INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_pause_schedule', 'EXECUTE', NULL, 'taskhub-pg schedule pause, resume'),
       ('function', 'taskhub_remove_schedule', 'EXECUTE', NULL, 'taskhub-pg schedule remove'),
       ('function', 'taskhub_list_schedules', 'EXECUTE', NULL, 'taskhub-pg schedule list, the dashboard'),
       ('table', 'taskhub_schedules', 'SELECT', NULL,
        'runbook: every read (inspect, status, check, the dashboard)')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
