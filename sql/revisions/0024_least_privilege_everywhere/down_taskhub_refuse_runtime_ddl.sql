-- The DDL guard's function back to revision 0005's body (see provider/deploy/ddl_guard.py).
DO $guard_body$
DECLARE
    v_function regprocedure := '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure;
    v_owner    name;
    v_roles    text;
BEGIN
    SELECT r.rolname INTO v_owner
      FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_roles AS r ON r.oid = p.proowner
     WHERE p.oid = v_function;
    IF NOT pg_catalog.pg_has_role(current_user, v_owner, 'USAGE') THEN
        RAISE WARNING 'taskhub-pg: the runtime DDL guard of schema __SCHEMA_NAME__ belongs to %, '
                      'so it keeps its earlier body until % runs taskhub-pg grant-runtime-role',
                      v_owner, v_owner;
        RETURN;
    END IF;
    SELECT substr(c.setting, length('taskhub.guarded_roles=') + 1) INTO v_roles
      FROM pg_catalog.pg_proc AS p
     CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
     WHERE p.oid = v_function AND c.setting LIKE 'taskhub.guarded_roles=%';
    EXECUTE $create$
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl()
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
$create$;
    IF v_roles IS NOT NULL THEN
        EXECUTE format('ALTER FUNCTION %s SET taskhub.guarded_roles = %L', v_function, v_roles);
    END IF;
END
$guard_body$;
