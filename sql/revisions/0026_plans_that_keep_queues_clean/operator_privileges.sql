-- Retention (taskhub-pg prune, the dashboard's prune) asks how far behind the
-- dispatchers are before each batch: granted to every operator role by the
-- migration run (taskhub_set_operator_privileges).
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES ('function', 'taskhub_dispatch_lag_ms', 'EXECUTE', NULL,
        'taskhub-pg prune (waits while the hub is busy), the dashboard''s prune')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
