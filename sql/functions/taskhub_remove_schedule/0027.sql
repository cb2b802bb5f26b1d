-- Remove a schedule; the instances it started stay. No such schedule: P0002.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_remove_schedule(p_name text)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM __SCHEMA__.taskhub_schedules AS s WHERE s.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'schedule % not found', p_name USING ERRCODE = 'P0002';
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_remove_schedule(text) FROM PUBLIC;
