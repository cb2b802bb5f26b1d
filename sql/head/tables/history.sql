-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
CREATE TABLE __SCHEMA__.history (
    instance_id  text        NOT NULL,
    execution_id bigint      NOT NULL,
    event_id     bigint      NOT NULL,
    event_type   text        NOT NULL,
    event_data   text        NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (instance_id, execution_id, event_id)
);
-- Payloads stay in the row (MAIN): reading a history costs no TOAST lookup
-- per event; lz4, where the server has it, decompresses faster than pglz.
ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET STORAGE MAIN;
DO $lz4$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression') THEN
        ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION lz4;
    END IF;
END
$lz4$;
