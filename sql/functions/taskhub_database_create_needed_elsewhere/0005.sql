-- Whether a guarded runtime role of another task-hub schema in this database
-- still needs CREATE on the database.
CREATE FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role text)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1
          FROM pg_proc AS p
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
         CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
         WHERE p.proname = 'taskhub_refuse_runtime_ddl'
           AND n.nspname NOT IN ('public', '__SCHEMA_NAME__')
           AND c.setting LIKE 'taskhub.guarded_roles=%'
           AND p_role = ANY (substr(c.setting, length('taskhub.guarded_roles=') + 1)::text[]))
$$;

