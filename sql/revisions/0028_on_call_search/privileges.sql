-- The search by instance ID prefix and a part of the name: granted to every
-- runtime role (the client's find) and operator role (taskhub-pg inspect
-- instances, the dashboard) by the migration run.
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
VALUES ('function', 'taskhub_search_instances', 'EXECUTE',
        'taskhub provider: find_instances by id prefix or a part of the name')
ON CONFLICT (object_kind, object_name) DO NOTHING;

INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_search_instances', 'EXECUTE', NULL,
        'taskhub-pg inspect instances, the dashboard''s search')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
