-- taskhub-pg 0029: the scheduler's calls (a fire that says how it went, the
-- schedules with their failures, a failure it counts itself) and the
-- application's steered schedule are granted to
-- every runtime role, and the list with failures to every operator role, by
-- the migration run (taskhub_refresh_runtime_roles).
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE',
       'taskhub schedules: one that cannot start stops no other, and is paused after a few failures'
  FROM unnest(ARRAY['taskhub_fire_schedule_outcome', 'taskhub_read_schedules',
                    'taskhub_count_schedule_failure']) AS name
UNION ALL
SELECT 'function', 'taskhub_set_steered_schedule', 'EXECUTE',
       'taskhub schedules: a schedule whose ticks start with a priority and labels'
ON CONFLICT (object_kind, object_name) DO NOTHING;

INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_read_schedules', 'EXECUTE', NULL,
        'taskhub-pg schedule list, the dashboard')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
