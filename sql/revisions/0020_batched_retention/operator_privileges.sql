-- taskhub-pg 0020: who may prune in batches.
-- An operator prunes (taskhub-pg prune, the dashboard's prune): granted to
-- every operator role by the migration run. The runtime does not call it.
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES
    ('function', 'taskhub_prune_ended', 'EXECUTE', NULL, 'taskhub-pg prune (in batches), the dashboard''s prune')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
