-- taskhub-pg 0029: an operator role changes and reads the flow rules
-- (granted by the migration run to every operator role: taskhub_grant_operator_role).
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_pause_flow', 'EXECUTE', NULL, 'taskhub-pg pause, the Client'),
       ('function', 'taskhub_resume_flow', 'EXECUTE', NULL, 'taskhub-pg resume, the Client'),
       ('function', 'taskhub_set_flow_limit', 'EXECUTE', NULL, 'taskhub-pg limit set, the Client'),
       ('function', 'taskhub_remove_flow_limit', 'EXECUTE', NULL, 'taskhub-pg limit remove, the Client'),
       ('function', 'taskhub_set_flow_rate', 'EXECUTE', NULL, 'taskhub-pg limit rate, the Client'),
       ('function', 'taskhub_remove_flow_rate', 'EXECUTE', NULL, 'taskhub-pg limit remove-rate, the Client'),
       ('function', 'taskhub_read_flow_rules', 'EXECUTE', NULL, 'taskhub-pg limit list, status, the metrics'),
       ('table', 'taskhub_flow_rules', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'),
       ('table', 'taskhub_flow_slots', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'),
       ('table', 'taskhub_flow_changes', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'),
       ('table', 'taskhub_flow_summary', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'),
       ('table', 'taskhub_flow_buckets', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'),
       ('table', 'taskhub_instance_labels', 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;

-- Starts with a priority and labels: granted to every runtime role by the
-- migration run (taskhub_refresh_runtime_roles), as the starts without.
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
VALUES ('function', 'taskhub_start_steered_orchestrations', 'EXECUTE',
        'taskhub application client: start and start_many with a priority and labels')
ON CONFLICT (object_kind, object_name) DO NOTHING;
