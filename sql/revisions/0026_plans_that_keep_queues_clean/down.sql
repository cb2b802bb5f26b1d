-- taskhub-pg 0026, downgrade: the privilege row of taskhub_dispatch_lag_ms
-- (the function itself is dropped by the migration).
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_dispatch_lag_ms';
