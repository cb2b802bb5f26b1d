-- The event-trigger function of the DDL guard. The guarded roles are a
-- setting of the function itself (taskhub_rebuild_runtime_ddl_guard sets
-- them), not a table: the trigger fires for every role in the database, and
-- most of them may not read this schema. (Only a superuser may set such a
-- setting, as only a superuser may create the event trigger: the function
-- starts without it.)
CREATE FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_command_tag text;
BEGIN
    -- A CREATE ... IF NOT EXISTS that found its object reports no command.
    SELECT c.command_tag INTO v_command_tag
      FROM pg_event_trigger_ddl_commands() AS c
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1
                 FROM pg_roles AS guarded
                WHERE guarded.rolname = ANY (
                          coalesce(nullif(current_setting('taskhub.guarded_roles', true), ''), '{}')::text[])
                  AND pg_has_role(current_user, guarded.oid, 'MEMBER'))
       AND NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
    THEN
        RAISE EXCEPTION 'taskhub-pg: role % is a task-hub runtime role and may not run DDL (%)',
                        current_user, v_command_tag
              USING ERRCODE = '42501',
                    HINT = 'Schema changes belong to the migrations (alembic upgrade), run as the owner.';
    END IF;
END;
$$;

