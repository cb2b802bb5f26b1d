-- taskhub-pg 0025, downgrade: the privilege row of taskhub_start_orchestration
-- (the function itself is dropped by the migration).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_start_orchestration';
