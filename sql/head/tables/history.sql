-- Columns and keys are those of the duroxide 0.2.2 Postgres schema, so that
-- the released runtime works unchanged on them (it reads and writes through
-- the functions alone), with one type of our own: event_data is json where
-- duroxide has text (revision 0029, on a hub a migration run creates), so
-- that PostgreSQL validates an event once, as it is written, and a fetch
-- hands a history over without parsing it again. A hub that existed before
-- keeps text until `taskhub-pg turn-form json` converts it, with its
-- runtimes stopped; every function reads and writes either. Indexes are our
-- own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
CREATE TABLE __SCHEMA__.history (
    instance_id  text        NOT NULL,
    execution_id bigint      NOT NULL,
    event_id     bigint      NOT NULL,
    event_type   text        NOT NULL,
    event_data   json        NOT NULL,
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
