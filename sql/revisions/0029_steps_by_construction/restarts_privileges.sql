-- taskhub-pg 0029: an operator role restarts an ended instance (from the input it
-- ran with: another input is the application's) and reads the record (granted by
-- the migration run to every operator role).
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_restart_instance', 'EXECUTE', NULL, 'taskhub-pg restart, the dashboard''s restart, the Client'),
       ('function', 'taskhub_read_restarts', 'EXECUTE', NULL, 'taskhub-pg inspect instance, the dashboard, the Client'),
       ('table', 'taskhub_restarts', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;

-- The application restarts too (Client.restart), with another input if it
-- gives one: granted to every runtime role by the migration run.
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE',
       'taskhub application client: restart an ended instance (another input too), read the record'
  FROM unnest(ARRAY['taskhub_restart_instance', 'taskhub_restart_instance_with_input',
                    'taskhub_read_restarts']) AS name
ON CONFLICT (object_kind, object_name) DO NOTHING;
