-- taskhub-pg 0029 down: flow control goes (the functions that read it went
-- first); the worker queue keeps the columns duroxide has.
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_name IN ('taskhub_pause_flow', 'taskhub_resume_flow', 'taskhub_set_flow_limit',
                       'taskhub_remove_flow_limit', 'taskhub_read_flow_rules',
                       'taskhub_flow_rules', 'taskhub_flow_slots', 'taskhub_flow_changes',
                       'taskhub_flow_summary', 'taskhub_flow_buckets',
                       'taskhub_set_flow_rate', 'taskhub_remove_flow_rate',
                       'taskhub_instance_labels');
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_name = 'taskhub_start_steered_orchestrations';
DROP TABLE __SCHEMA__.taskhub_flow_rules, __SCHEMA__.taskhub_flow_slots,
           __SCHEMA__.taskhub_flow_changes, __SCHEMA__.taskhub_flow_summary,
           __SCHEMA__.taskhub_flow_buckets;
ALTER TABLE __SCHEMA__.worker_queue DROP COLUMN taskhub_activity_name;
