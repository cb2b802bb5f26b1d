-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- Key-value state committed at execution boundaries.
CREATE TABLE __SCHEMA__.kv_store (
    instance_id        text   NOT NULL,
    key                text   NOT NULL,
    value              text   NOT NULL,
    execution_id       bigint NOT NULL,
    last_updated_at_ms bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (instance_id, key)
);
CREATE INDEX taskhub_kv_store_execution_idx ON __SCHEMA__.kv_store (instance_id, execution_id);
