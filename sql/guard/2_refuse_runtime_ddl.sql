-- The guard's event-trigger function: DDL by a role that acts as, or
-- inherits from, a guarded runtime role is refused (SQLSTATE 42501).
--
-- Guarantees: it runs as whoever runs DDL (not SECURITY DEFINER), with
-- search_path pinned and every name qualified, and reads only the catalogue
-- and the guard's own list (taskhub_guard.guarded_roles). A CREATE ... IF NOT
-- EXISTS that found its object reports no command and passes: the released
-- duroxide runtime runs two at connect time. A superuser is never refused.
CREATE OR REPLACE FUNCTION taskhub_guard.refuse_runtime_ddl()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_command_tag text;
BEGIN
    SELECT c.command_tag INTO v_command_tag
      FROM pg_catalog.pg_event_trigger_ddl_commands() AS c
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1
                 FROM taskhub_guard.guarded_roles AS g
                 JOIN pg_catalog.pg_roles AS guarded ON guarded.rolname = g.role_name
                 -- USAGE: a role acting as a guarded one, or inheriting its
                 -- rights (an admin-option membership that gives neither, as
                 -- PostgreSQL 16+ gives every CREATEROLE admin, does not count).
                WHERE pg_catalog.pg_has_role(current_user, guarded.oid, 'USAGE'))
       AND NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user)
    THEN
        RAISE EXCEPTION 'taskhub-pg: role % is a task-hub runtime role and may not run DDL (%)',
                        current_user, v_command_tag
              USING ERRCODE = '42501',
                    HINT = 'Schema changes belong to the migrations (alembic upgrade), run as the owner.';
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION taskhub_guard.refuse_runtime_ddl() FROM PUBLIC;
