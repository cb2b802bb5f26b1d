-- taskhub-pg 0029 down: restarts go (the functions went first), with their record.
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_name IN ('taskhub_restart_instance', 'taskhub_read_restarts', 'taskhub_restarts');
DROP TABLE __SCHEMA__.taskhub_restarts;
