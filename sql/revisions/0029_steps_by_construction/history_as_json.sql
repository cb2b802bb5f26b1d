-- taskhub-pg 0029: a hub this migration run creates stores its history as
-- json (sql/head/tables/history.sql), so that each event is validated once,
-- as it is written, and a fetch hands a history over without a parse. Its
-- table is empty, so the change of type rewrites nothing worth a wait. A hub
-- that existed before the run keeps text: its table may be large and its
-- runtimes live, and a rewrite would hold them for its duration.
-- `taskhub-pg turn-form json` converts it, with the runtimes stopped.
DO $history_form$
BEGIN
    IF coalesce(pg_catalog.current_setting('taskhub.new_hub', true), 'off') = 'on'
       AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.history) THEN
        -- A change of type takes the type's storage: the column's own
        -- (sql/head/tables/history.sql) is set again.
        ALTER TABLE __SCHEMA__.history
            ALTER COLUMN event_data TYPE json USING event_data::json,
            ALTER COLUMN event_data SET STORAGE MAIN;
        IF 'lz4' = ANY (SELECT pg_catalog.unnest(s.enumvals) FROM pg_catalog.pg_settings AS s
                         WHERE s.name = 'default_toast_compression') THEN
            ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION lz4;
        END IF;
    END IF;
END
$history_form$;
