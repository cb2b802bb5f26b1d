-- Grant (p_grant) or revoke everything a runtime role gets in this schema.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(
    p_role text, p_runtime_ddl text, p_had_database_create boolean, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_statement text := CASE WHEN p_grant THEN 'GRANT %s ON %s TO %I' ELSE 'REVOKE %s ON %s FROM %I' END;
    v_needed    record;
    v_target    text;
BEGIN
    EXECUTE format(v_statement, 'USAGE', 'SCHEMA __SCHEMA__', p_role);
    -- The list is read on its own, then matched against the catalogue: on a
    -- Citus hub it is a distributed table, and a join with pg_proc or
    -- pg_class would run on the worker holding it, against that catalogue.
    FOR v_needed IN
        SELECT rp.object_kind, rp.object_name, rp.privilege
          FROM __SCHEMA__.taskhub_runtime_privileges AS rp
    LOOP
        FOR v_target IN
            SELECT 'FUNCTION ' || p.oid::regprocedure::text
              FROM pg_proc AS p
             WHERE v_needed.object_kind = 'function'
               AND p.pronamespace = '__SCHEMA__'::regnamespace
               AND p.proname = v_needed.object_name
            UNION ALL
            SELECT 'TABLE ' || c.oid::regclass::text
              FROM pg_class AS c
             WHERE v_needed.object_kind = 'table'
               AND c.relnamespace = '__SCHEMA__'::regnamespace
               AND c.relname = v_needed.object_name
        LOOP
            EXECUTE format(v_statement, v_needed.privilege, v_target, p_role);
        END LOOP;
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
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(text, text, boolean, boolean) FROM PUBLIC;
