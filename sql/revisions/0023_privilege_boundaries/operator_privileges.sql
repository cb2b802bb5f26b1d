-- taskhub-pg 0023: what an operator role is granted, by name. No function
-- that takes a work item (enqueue_orchestrator_work and its traced variant:
-- any message, a forged completion too) or a delay (abandon_work_item: an
-- activity held back for any time); instead the cancel and raise-event the
-- hub builds itself and an activity's release without a delay. SELECT on
-- each of the hub's own tables and views instead of every table of the
-- schema (a hub in `public` sits beside an application's tables).
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE object_kind = 'function'
   AND object_name IN ('enqueue_orchestrator_work', 'taskhub_enqueue_traced_orchestrator_work',
                       'abandon_work_item');
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES
    ('function', 'taskhub_cancel_instance', 'EXECUTE', NULL, 'taskhub-pg cancel, the dashboard''s cancel'),
    ('function', 'taskhub_raise_event', 'EXECUTE', NULL, 'taskhub-pg raise-event'),
    ('function', 'taskhub_release_work_item_lease', 'EXECUTE', NULL, 'taskhub-pg release-lease --activities, runbook: release an activity lease')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
SELECT 'table', name, 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'
  FROM unnest(ARRAY[
           '_duroxide_migrations', 'dead_letters', 'executions', 'history', 'instance_locks',
           'instances', 'kv_delta', 'kv_store', 'orchestrator_queue', 'sessions',
           'shielded_failures', 'taskhub_definitions', 'taskhub_operator_privileges',
           'taskhub_operator_roles', 'taskhub_pg_alembic_version', 'taskhub_runtime_privileges',
           'taskhub_runtime_roles', 'taskhub_set_aside_functions', 'taskhub_settings',
           'taskhub_trace_contexts', 'taskhub_wakeup_listeners', 'worker_queue',
           'taskhub_current_leases', 'taskhub_poison_candidates', 'taskhub_queue_health',
           'taskhub_session_owners', 'taskhub_stuck_instances']) AS name
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
