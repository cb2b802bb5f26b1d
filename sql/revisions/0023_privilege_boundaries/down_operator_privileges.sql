-- taskhub-pg 0023, downgrade: the list of 0022 (its SELECT is ON ALL TABLES
-- IN SCHEMA again, given by 0022's taskhub_set_operator_privileges at the end
-- of the run; the functions this revision adds go with their grants).
DELETE FROM __SCHEMA__.taskhub_operator_privileges
 WHERE privilege = 'SELECT'
    OR (object_kind = 'function'
        AND object_name IN ('taskhub_cancel_instance', 'taskhub_raise_event',
                            'taskhub_release_work_item_lease'));
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES
    ('function', 'abandon_work_item', 'EXECUTE', NULL, 'runbook: release an activity lease'),
    ('function', 'enqueue_orchestrator_work', 'EXECUTE', NULL, 'taskhub-pg cancel, raise-event'),
    ('function', 'taskhub_enqueue_traced_orchestrator_work', 'EXECUTE', NULL, 'taskhub-pg cancel, raise-event from a traced process')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
