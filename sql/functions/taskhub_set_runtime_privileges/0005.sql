-- Grant (p_grant) or revoke everything a runtime role gets in this schema.
CREATE FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(
    p_role text, p_runtime_ddl text, p_had_database_create boolean, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_statement text := CASE WHEN p_grant THEN 'GRANT %s ON %s TO %I' ELSE 'REVOKE %s ON %s FROM %I' END;
    v_object    record;
BEGIN
    EXECUTE format(v_statement, 'USAGE', 'SCHEMA __SCHEMA__', p_role);
    FOR v_object IN
        SELECT rp.privilege, 'FUNCTION ' || p.oid::regprocedure::text AS target
          FROM __SCHEMA__.taskhub_runtime_privileges AS rp
          JOIN pg_proc AS p
            ON p.proname = rp.object_name AND p.pronamespace = '__SCHEMA__'::regnamespace
         WHERE rp.object_kind = 'function'
        UNION ALL
        SELECT rp.privilege, 'TABLE ' || c.oid::regclass::text
          FROM __SCHEMA__.taskhub_runtime_privileges AS rp
          JOIN pg_class AS c
            ON c.relname = rp.object_name AND c.relnamespace = '__SCHEMA__'::regnamespace
         WHERE rp.object_kind = 'table'
    LOOP
        EXECUTE format(v_statement, v_object.privilege, v_object.target, p_role);
    END LOOP;

    IF p_runtime_ddl = 'guarded' THEN
        EXECUTE format(v_statement, 'CREATE', 'SCHEMA __SCHEMA__', p_role);
        IF '__SCHEMA_NAME__' <> 'public'
           AND (p_grant OR NOT (p_had_database_create
                                OR __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role)))
        THEN
            EXECUTE format(v_statement, 'CREATE', format('DATABASE %I', current_database()), p_role);
        END IF;
    END IF;
END;
$$;

