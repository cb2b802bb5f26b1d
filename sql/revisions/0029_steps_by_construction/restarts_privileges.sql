-- taskhub-pg 0029: an operator role restarts an ended instance and reads the
-- record (granted by the migration run to every operator role).
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_restart_instance', 'EXECUTE', NULL, 'taskhub-pg restart, the dashboard''s restart, the Client'),
       ('function', 'taskhub_read_restarts', 'EXECUTE', NULL, 'taskhub-pg inspect instance, the dashboard, the Client'),
       ('table', 'taskhub_restarts', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
