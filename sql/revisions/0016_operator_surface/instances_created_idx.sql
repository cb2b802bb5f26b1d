-- Operators page through instances newest first (taskhub_find_instances).
-- IF NOT EXISTS: on a large hub, build it first without blocking anyone
-- (CREATE INDEX CONCURRENTLY, docs/ops.md); the upgrade then finds it.
CREATE INDEX IF NOT EXISTS taskhub_instances_created_idx
    ON __SCHEMA__.instances (created_at, instance_id);
