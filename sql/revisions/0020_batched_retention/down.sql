-- taskhub-pg 0020, downgrade: the privilege row of taskhub_prune_ended (the
-- function itself is dropped by the migration; dropping it takes its grants).
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_prune_ended';
