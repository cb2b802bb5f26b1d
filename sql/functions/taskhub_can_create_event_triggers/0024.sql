-- Whether the current role may create an event trigger: a superuser, and on
-- a managed service the admin the service lets (RDS's rds_superuser, Cloud
-- SQL's cloudsqlsuperuser, Neon's neon_superuser, Supabase's postgres). It
-- is tried, not guessed from role names: an event trigger on the guard's own
-- function is created in a subtransaction, then rolled back.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_can_create_event_triggers()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    BEGIN
        CREATE EVENT TRIGGER taskhub_event_trigger_probe ON ddl_command_end
            EXECUTE FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl();
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = 'taskhub-pg: probe rolled back';
    EXCEPTION
        WHEN insufficient_privilege THEN
            RETURN false;
        WHEN raise_exception THEN
            RETURN true;
    END;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_can_create_event_triggers() FROM PUBLIC;
