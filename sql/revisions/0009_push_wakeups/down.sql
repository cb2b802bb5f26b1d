-- taskhub-pg 0009, downgrade: the listeners' table and their privilege rows
-- (the functions themselves are dropped by the migration).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function' AND object_name IN ('taskhub_listen', 'taskhub_set_waiting');
DROP TABLE __SCHEMA__.taskhub_wakeup_listeners;
