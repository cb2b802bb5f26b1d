-- taskhub-pg 0029 down: restarts go (the functions went first), with their record.
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_name IN ('taskhub_restart_instance', 'taskhub_read_restarts', 'taskhub_restarts');
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_name IN ('taskhub_restart_instance', 'taskhub_restart_instance_with_input',
                       'taskhub_read_restarts');
DROP TABLE __SCHEMA__.taskhub_restarts;
