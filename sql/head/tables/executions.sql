-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
CREATE TABLE __SCHEMA__.executions (
    instance_id            text        NOT NULL,
    execution_id           bigint      NOT NULL,
    status                 text        NOT NULL DEFAULT 'Running',
    output                 text,
    started_at             timestamptz NOT NULL,
    completed_at           timestamptz,
    duroxide_version_major integer,
    duroxide_version_minor integer,
    duroxide_version_patch integer,
    PRIMARY KEY (instance_id, execution_id)
);
