-- Everything an operator role is granted besides USAGE on the schema, one
-- row per object and privilege, with the runbook step that needs it
-- (taskhub_set_operator_privileges grants exactly these, by name). SELECT on
-- each of the hub's own tables and views, never on the schema's other
-- tables: a hub in `public` sits beside an application's. The functions run
-- as their owner (SECURITY DEFINER) or only read; none takes a work item or
-- a delay (revision 0023): an operator cannot write a message of its choice,
-- nor hold an activity back.
CREATE TABLE __SCHEMA__.taskhub_operator_privileges (
    object_kind text NOT NULL CHECK (object_kind IN ('function', 'table')),
    object_name text NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('EXECUTE', 'SELECT', 'UPDATE', 'DELETE')),
    -- Only these columns (NULL: the whole table).
    columns     text[],
    needed_by   text NOT NULL,
    PRIMARY KEY (object_kind, object_name, privilege),
    CHECK ((object_kind = 'function') = (privilege = 'EXECUTE'))
);

INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES
    ('function', 'taskhub_check_drift', 'EXECUTE', NULL, 'taskhub-pg check'),
    ('function', 'taskhub_live_definitions', 'EXECUTE', NULL, 'taskhub-pg check'),
    ('function', 'taskhub_duroxide_versions', 'EXECUTE', NULL, 'taskhub-pg check'),
    ('function', 'taskhub_find_instances', 'EXECUTE', NULL, 'taskhub-pg inspect instances'),
    ('function', 'taskhub_transient_conditions', 'EXECUTE', NULL, 'runbook: which faults count as transient'),
    ('function', 'taskhub_requeue_dead_letter', 'EXECUTE', NULL, 'taskhub-pg requeue'),
    ('function', 'taskhub_release_orchestration_lease', 'EXECUTE', NULL, 'taskhub-pg release-lease'),
    ('function', 'get_parent_id', 'EXECUTE', NULL, 'taskhub-pg delete-instance'),
    ('function', 'list_children', 'EXECUTE', NULL, 'taskhub-pg delete-instance, prune'),
    ('function', 'delete_instances_atomic', 'EXECUTE', NULL, 'taskhub-pg delete-instance, prune'),
    ('function', 'taskhub_bulk_delete_candidates', 'EXECUTE', NULL, 'taskhub-pg prune'),
    ('function', 'taskhub_prune_ended', 'EXECUTE', NULL, 'taskhub-pg prune (in batches), the dashboard''s prune'),
    ('function', 'taskhub_trace_context', 'EXECUTE', NULL, 'runbook: which trace an instance belongs to'),
    ('table', 'taskhub_settings', 'UPDATE', '{value}', 'runbook: the dead-letter threshold, the transient failure policy'),
    ('table', 'shielded_failures', 'DELETE', NULL, 'runbook: retention of the shielded-failure log'),
    -- Revision 0023: messages built by the hub, a release without a delay.
    ('function', 'taskhub_cancel_instance', 'EXECUTE', NULL, 'taskhub-pg cancel, the dashboard''s cancel'),
    ('function', 'taskhub_raise_event', 'EXECUTE', NULL, 'taskhub-pg raise-event'),
    ('function', 'taskhub_release_work_item_lease', 'EXECUTE', NULL, 'taskhub-pg release-lease --activities, runbook: release an activity lease'),
    -- Revision 0026: retention waits while the dispatchers are behind.
    ('function', 'taskhub_dispatch_lag_ms', 'EXECUTE', NULL, 'taskhub-pg prune (waits while the hub is busy), the dashboard''s prune'),
    -- Revision 0027: schedules, paused, resumed and removed by operators too
    -- (not created or changed: that would start orchestrations of their choice).
    ('function', 'taskhub_pause_schedule', 'EXECUTE', NULL, 'taskhub-pg schedule pause, resume'),
    ('function', 'taskhub_remove_schedule', 'EXECUTE', NULL, 'taskhub-pg schedule remove'),
    ('function', 'taskhub_list_schedules', 'EXECUTE', NULL, 'taskhub-pg schedule list, the dashboard'),
    -- Revision 0028: search by id prefix and a part of the name.
    ('function', 'taskhub_search_instances', 'EXECUTE', NULL, 'taskhub-pg inspect instances, the dashboard''s search'),
    -- Revision 0029: schedules with their failed fires.
    ('function', 'taskhub_read_schedules', 'EXECUTE', NULL, 'taskhub-pg schedule list, the dashboard'),
    ('function', 'taskhub_pause_flow', 'EXECUTE', NULL, 'taskhub-pg pause, the Client'),
    ('function', 'taskhub_resume_flow', 'EXECUTE', NULL, 'taskhub-pg resume, the Client'),
    ('function', 'taskhub_set_flow_limit', 'EXECUTE', NULL, 'taskhub-pg limit set, the Client'),
    ('function', 'taskhub_remove_flow_limit', 'EXECUTE', NULL, 'taskhub-pg limit remove, the Client'),
    ('function', 'taskhub_set_flow_rate', 'EXECUTE', NULL, 'taskhub-pg limit rate, the Client'),
    ('function', 'taskhub_remove_flow_rate', 'EXECUTE', NULL, 'taskhub-pg limit remove-rate, the Client'),
    ('function', 'taskhub_read_flow_rules', 'EXECUTE', NULL, 'taskhub-pg limit list, status, the metrics'),
    -- Revision 0029: restart an ended instance, read the record.
    ('function', 'taskhub_restart_instance', 'EXECUTE', NULL, 'taskhub-pg restart, the dashboard''s restart, the Client'),
    ('function', 'taskhub_read_restarts', 'EXECUTE', NULL, 'taskhub-pg inspect instance, the dashboard, the Client');

-- Every read of the runbook: the hub's own tables and views, by name.
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
SELECT 'table', name, 'SELECT', NULL, 'runbook: every read (inspect, status, check, the dashboard)'
  FROM unnest(ARRAY[
           '_duroxide_migrations', 'dead_letters', 'executions', 'history', 'instance_locks',
           'instances', 'kv_delta', 'kv_store', 'orchestrator_queue', 'sessions',
           'shielded_failures', 'taskhub_definitions', 'taskhub_operator_privileges',
           'taskhub_operator_roles', 'taskhub_pg_alembic_version', 'taskhub_runtime_privileges',
           'taskhub_runtime_roles', 'taskhub_schedules', 'taskhub_set_aside_functions',
           'taskhub_settings',
           'taskhub_trace_contexts', 'taskhub_wakeup_listeners', 'worker_queue',
           'taskhub_current_leases', 'taskhub_poison_candidates', 'taskhub_queue_health',
           'taskhub_session_owners', 'taskhub_stuck_instances', 'taskhub_flow_rules',
           'taskhub_flow_slots', 'taskhub_flow_changes', 'taskhub_flow_summary',
           'taskhub_flow_buckets', 'taskhub_instance_labels', 'taskhub_restarts']) AS name;
