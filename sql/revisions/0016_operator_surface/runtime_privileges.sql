-- The provider's find_instances, and its delete_instance of an instance not
-- started, call taskhub_find_instances: a runtime role may too.
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
VALUES ('function', 'taskhub_find_instances', 'EXECUTE',
        'taskhub provider: find_instances, delete_instance of an instance not started')
ON CONFLICT (object_kind, object_name) DO NOTHING;
