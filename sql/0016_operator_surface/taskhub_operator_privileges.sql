-- What an operator role is granted besides SELECT on every table and view of
-- the schema, one row per object, with the runbook step that needs it.
-- The functions run as their owner (SECURITY DEFINER) or only read.
CREATE TABLE __SCHEMA__.taskhub_operator_privileges (
    object_kind text NOT NULL CHECK (object_kind IN ('function', 'table')),
    object_name text NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('EXECUTE', 'UPDATE', 'DELETE')),
    needed_by   text NOT NULL,
    PRIMARY KEY (object_kind, object_name, privilege),
    CHECK ((object_kind = 'function') = (privilege = 'EXECUTE'))
);

INSERT INTO __SCHEMA__.taskhub_operator_privileges (object_kind, object_name, privilege, needed_by)
VALUES
    ('function', 'taskhub_check_drift', 'EXECUTE', 'taskhub-pg check'),
    ('function', 'taskhub_live_definitions', 'EXECUTE', 'taskhub-pg check'),
    ('function', 'taskhub_duroxide_versions', 'EXECUTE', 'taskhub-pg check'),
    ('function', 'taskhub_find_instances', 'EXECUTE', 'taskhub-pg inspect instances'),
    ('function', 'taskhub_requeue_dead_letter', 'EXECUTE', 'taskhub-pg requeue'),
    ('function', 'taskhub_release_orchestration_lease', 'EXECUTE', 'taskhub-pg release-lease'),
    ('function', 'abandon_work_item', 'EXECUTE', 'runbook: release an activity lease'),
    ('function', 'enqueue_orchestrator_work', 'EXECUTE', 'taskhub-pg cancel, raise-event'),
    ('function', 'get_parent_id', 'EXECUTE', 'taskhub-pg delete-instance'),
    ('function', 'list_children', 'EXECUTE', 'taskhub-pg delete-instance, prune'),
    ('function', 'delete_instances_atomic', 'EXECUTE', 'taskhub-pg delete-instance, prune'),
    ('function', 'taskhub_bulk_delete_candidates', 'EXECUTE', 'taskhub-pg prune'),
    ('table', 'taskhub_settings', 'UPDATE', 'runbook: the dead-letter threshold, the transient failure policy'),
    ('table', 'shielded_failures', 'DELETE', 'runbook: retention of the shielded-failure log');
