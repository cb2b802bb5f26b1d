-- Name of this schema's event trigger (event triggers are per database).
CREATE FUNCTION __SCHEMA__.taskhub_runtime_ddl_guard_name()
RETURNS text
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'taskhub_ddl_guard_' || left(md5('__SCHEMA_NAME__'), 16)
$$;

