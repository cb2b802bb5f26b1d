-- What an operator role is granted besides SELECT on every table and view of
-- the schema, one row per object, with the runbook step that needs it.
-- The functions run as their owner (SECURITY DEFINER) or only read.
CREATE TABLE __SCHEMA__.taskhub_operator_privileges (
    object_kind text NOT NULL CHECK (object_kind IN ('function', 'table')),
    object_name text NOT NULL,
    privilege   text NOT NULL CHECK (privilege IN ('EXECUTE', 'UPDATE', 'DELETE')),
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
    ('function', 'abandon_work_item', 'EXECUTE', NULL, 'runbook: release an activity lease'),
    ('function', 'enqueue_orchestrator_work', 'EXECUTE', NULL, 'taskhub-pg cancel, raise-event'),
    ('function', 'get_parent_id', 'EXECUTE', NULL, 'taskhub-pg delete-instance'),
    ('function', 'list_children', 'EXECUTE', NULL, 'taskhub-pg delete-instance, prune'),
    ('function', 'delete_instances_atomic', 'EXECUTE', NULL, 'taskhub-pg delete-instance, prune'),
    ('function', 'taskhub_bulk_delete_candidates', 'EXECUTE', NULL, 'taskhub-pg prune'),
    ('table', 'taskhub_settings', 'UPDATE', '{value}', 'runbook: the dead-letter threshold, the transient failure policy'),
    ('table', 'shielded_failures', 'DELETE', NULL, 'runbook: retention of the shielded-failure log');
