-- `taskhub-pg turn-form json` on a hub whose history is stored as text (one
-- that existed before revision 0029): store it as json, as a hub created
-- since is, so that a fetch hands a history over without parsing it again
-- (sql/head/tables/history.sql). Every row is rewritten under the table's
-- ACCESS EXCLUSIVE lock: the verb runs with the hub's runtimes stopped.
--
-- An event that is not JSON (written by hand, or before the writes checked)
-- is kept as a JSON string that holds its text: a fetch handed it over so
-- before, and the runtime fails that one instance on it as it did.
CREATE FUNCTION pg_temp.taskhub_event_as_json(p_event text)
RETURNS json
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RETURN p_event::json;
EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
    RETURN pg_catalog.to_json(p_event);
END;
$$;

-- A change of type takes the type's storage: the column's own is set again.
ALTER TABLE __SCHEMA__.history
    ALTER COLUMN event_data TYPE json USING pg_temp.taskhub_event_as_json(event_data),
    ALTER COLUMN event_data SET STORAGE MAIN;

DO $compression$
BEGIN
    IF 'lz4' = ANY (SELECT pg_catalog.unnest(s.enumvals) FROM pg_catalog.pg_settings AS s
                     WHERE s.name = 'default_toast_compression') THEN
        ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION lz4;
    END IF;
END
$compression$;

DROP FUNCTION pg_temp.taskhub_event_as_json(text);
