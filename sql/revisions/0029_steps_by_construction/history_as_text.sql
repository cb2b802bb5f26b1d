-- taskhub-pg 0029, downgrade: the functions of 0028 write the history as
-- text, so a history stored as json goes back to text: every row is
-- rewritten under the table's lock (declared: LOCKS_ON_DOWNGRADE). On a large
-- hub, stop its runtimes first. The text is the one stored.
DO $history_form$
BEGIN
    IF (SELECT a.atttypid FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = '__SCHEMA__.history'::regclass
           AND a.attname = 'event_data') = 'json'::regtype THEN
        ALTER TABLE __SCHEMA__.history
            ALTER COLUMN event_data TYPE text USING event_data::text,
            ALTER COLUMN event_data SET STORAGE MAIN;
        IF 'lz4' = ANY (SELECT pg_catalog.unnest(s.enumvals) FROM pg_catalog.pg_settings AS s
                         WHERE s.name = 'default_toast_compression') THEN
            ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION lz4;
        END IF;
    END IF;
END
$history_form$;
