-- Grant (p_grant) or revoke everything a runtime role gets in this schema.
CREATE FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(
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
        -- The word goes into the statement: only the two a runtime needs.
        IF v_needed.privilege NOT IN ('EXECUTE', 'SELECT') THEN
            RAISE EXCEPTION 'taskhub_runtime_privileges names privilege % on %: a runtime role '
                            'gets only EXECUTE and SELECT', v_needed.privilege, v_needed.object_name
                  USING ERRCODE = '22023';
        END IF;
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

    -- Before PostgreSQL 15, CREATE on schema public is PUBLIC's by default:
    -- a runtime role should not hold it by a grant of its own either (what
    -- PUBLIC holds, `taskhub-pg check` reports). Taken back where this role
    -- may; a hub that lives in public keeps what it needs.
    IF p_grant AND '__SCHEMA_NAME__' <> 'public'
       AND EXISTS (SELECT 1
                     FROM pg_namespace AS n
                    CROSS JOIN LATERAL aclexplode(n.nspacl) AS a
                    WHERE n.nspname = 'public' AND a.privilege_type = 'CREATE'
                      AND a.grantee = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = p_role))
    THEN
        BEGIN
            EXECUTE format('REVOKE CREATE ON SCHEMA public FROM %I', p_role);
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;  -- not this role's to take back: check reports it
        END;
    END IF;

    -- CREATE only for a role the DDL guard names (its list is the guard's
    -- own, which only the role that made the guard changes): never DDL
    -- without the guard. Taking it back needs no such check.
    IF p_runtime_ddl = 'guarded'
       AND (NOT p_grant
            OR __SCHEMA__.taskhub_guard_names(p_role))
    THEN
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
