-- The provider starts orchestrations through taskhub_start_orchestration (a
-- start safe to repeat): granted to every runtime role by the migration run
-- (taskhub_refresh_runtime_roles).
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
VALUES ('function', 'taskhub_start_orchestration', 'EXECUTE',
        'taskhub provider: start_orchestration, safe to repeat with the same instance id')
ON CONFLICT (object_kind, object_name) DO NOTHING;
