-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
CREATE TABLE __SCHEMA__.instances (
    instance_id           text        NOT NULL PRIMARY KEY,
    orchestration_name    text        NOT NULL,
    orchestration_version text,
    current_execution_id  bigint      NOT NULL DEFAULT 1,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    parent_instance_id    text,
    custom_status         text,
    custom_status_version integer     NOT NULL DEFAULT 0
);
CREATE INDEX taskhub_instances_parent_idx
    ON __SCHEMA__.instances (parent_instance_id) WHERE parent_instance_id IS NOT NULL;
-- Operators page through instances newest first (taskhub_find_instances).
CREATE INDEX taskhub_instances_created_idx ON __SCHEMA__.instances (created_at, instance_id);
