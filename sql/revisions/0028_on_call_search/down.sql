-- taskhub-pg 0028, downgrade: the search's privilege rows (the function is
-- dropped by the migration).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_search_instances';
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_search_instances';
