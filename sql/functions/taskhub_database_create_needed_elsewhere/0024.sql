-- Whether a guarded runtime role of another task-hub schema in this database
-- still needs CREATE on the database.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role text)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1
          FROM pg_proc AS p
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
         WHERE p.proname = 'taskhub_refuse_runtime_ddl'
           AND n.nspname NOT IN ('public', '__SCHEMA_NAME__')
           AND p_role = ANY (__SCHEMA__.taskhub_guard_roles_of(p.oid::regprocedure)))
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(text) FROM PUBLIC;
