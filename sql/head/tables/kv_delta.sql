-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- Key-value changes of the current execution; a NULL value is a deletion.
CREATE TABLE __SCHEMA__.kv_delta (
    instance_id        text   NOT NULL,
    key                text   NOT NULL,
    value              text,
    last_updated_at_ms bigint NOT NULL,
    PRIMARY KEY (instance_id, key)
);
