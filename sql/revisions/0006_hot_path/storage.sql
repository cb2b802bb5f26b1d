-- taskhub-pg 0006: how the payload columns are stored.
--
-- History events and queue payloads of a few KB were moved out of line into
-- the TOAST table, so reading a history cost one TOAST index lookup per
-- event. MAIN keeps them in the row, compressed when that helps, and moves a
-- value out of line only when the row would not fit a page. lz4 (where the
-- server was built with it) decompresses several times faster than pglz.
-- Only new values are affected; existing rows are read as they are.
ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET STORAGE MAIN;
ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET STORAGE MAIN;
ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET STORAGE MAIN;

DO $lz4$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression') THEN
        ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION lz4;
        ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET COMPRESSION lz4;
        ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET COMPRESSION lz4;
    END IF;
END
$lz4$;
