-- The event-trigger function of this hub's own DDL guard, as revisions
-- 0005-0028 made it: an event trigger per hub (taskhub_runtime_ddl_guard_name)
-- whose list of roles is a setting of this function, or its comment (a guard
-- a managed service's admin made, on PostgreSQL 15 and later). From 0029 the
-- guard is the database's (schema taskhub_guard, provider/deploy/ddl_guard.py),
-- which no owner of a hub can change; this one stays for the hubs whose guard
-- a superuser installed before, until the first guard step moves its roles
-- there and drops its trigger. taskhub_guard_names reads its list meanwhile.
CREATE FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_command_tag text;
    v_guarded     text[];
BEGIN
    -- A CREATE ... IF NOT EXISTS that found its object reports no command.
    SELECT c.command_tag INTO v_command_tag
      FROM pg_event_trigger_ddl_commands() AS c
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_guarded := nullif(current_setting('taskhub.guarded_roles', true), '')::text[];
    IF v_guarded IS NULL THEN
        -- The comment, found through the catalogues by name: a cast to
        -- regprocedure needs USAGE on this schema, which most roles lack.
        SELECT substr(d.description, length('taskhub.guarded_roles=') + 1)::text[]
          INTO v_guarded
          FROM pg_description AS d
          JOIN pg_proc AS p ON p.oid = d.objoid
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
         WHERE d.classoid = 'pg_proc'::regclass
           AND d.objsubid = 0
           AND n.nspname = '__SCHEMA_NAME__'
           AND p.proname = 'taskhub_refuse_runtime_ddl'
           AND d.description LIKE 'taskhub.guarded_roles=%';
    END IF;
    IF EXISTS (SELECT 1
                 FROM pg_roles AS guarded
                WHERE guarded.rolname = ANY (coalesce(v_guarded, '{}'))
                  -- USAGE: a role acting as a guarded one, or inheriting its rights (an
                  -- admin-option membership that gives neither, as PostgreSQL 16+ gives
                  -- every CREATEROLE admin, does not count).
                  AND pg_has_role(current_user, guarded.oid, 'USAGE'))
       AND NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
    THEN
        RAISE EXCEPTION 'taskhub-pg: role % is a task-hub runtime role and may not run DDL (%)',
                        current_user, v_command_tag
              USING ERRCODE = '42501',
                    HINT = 'Schema changes belong to the migrations (alembic upgrade), run as the owner.';
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl() FROM PUBLIC;
