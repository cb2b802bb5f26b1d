-- taskhub-pg 0019, downgrade: the trace contexts' table and the privilege
-- rows of its functions (the functions themselves are dropped by the migration).
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function'
   AND object_name IN ('taskhub_enqueue_traced_orchestrator_work', 'taskhub_trace_context');
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function'
   AND object_name IN ('taskhub_enqueue_traced_orchestrator_work', 'taskhub_trace_context');
DROP TABLE __SCHEMA__.taskhub_trace_contexts;
