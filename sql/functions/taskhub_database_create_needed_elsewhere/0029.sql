-- Whether p_role, a guarded runtime role of another task-hub schema in this
-- database, still needs CREATE on the database: the database's guard names
-- it for another hub (a hub in public needs none), or another hub's own guard
-- of revisions 0005-0028 lists it.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role text)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_needed boolean := false;
BEGIN
    IF to_regclass('taskhub_guard.guarded_roles') IS NOT NULL THEN
        -- Dynamic: the list may not exist when this function is created.
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM taskhub_guard.guarded_roles'
                '                WHERE role_name = $1'
                '                  AND hub_schema NOT IN (''public'', $2))'
           INTO v_needed USING p_role, '__SCHEMA_NAME__';
        IF v_needed THEN
            RETURN true;
        END IF;
    END IF;
    RETURN EXISTS (
        SELECT 1
          FROM pg_proc AS p
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
         WHERE p.proname = 'taskhub_refuse_runtime_ddl'
           AND n.nspname NOT IN ('public', '__SCHEMA_NAME__')
           AND p_role = ANY (__SCHEMA__.taskhub_guard_roles_of(p.oid::regprocedure)));
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(text) FROM PUBLIC;
