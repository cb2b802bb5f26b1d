-- Re-grant every runtime role and operator role, so that objects a later
-- revision added are covered, and take PUBLIC's default EXECUTE off functions
-- created since. The migrations call it at the end of every run.
CREATE FUNCTION __SCHEMA__.taskhub_refresh_runtime_roles()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role     __SCHEMA__.taskhub_runtime_roles;
    v_operator text;
    v_count    integer := 0;
BEGIN
    PERFORM __SCHEMA__.taskhub_refuse_privileged_caller();
    PERFORM __SCHEMA__.taskhub_revoke_public_execute();
    FOR v_role IN SELECT * FROM __SCHEMA__.taskhub_runtime_roles ORDER BY role_name LOOP
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = v_role.role_name) THEN
            PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
                v_role.role_name, v_role.runtime_ddl, v_role.had_database_create, true);
            v_count := v_count + 1;
        END IF;
    END LOOP;
    FOR v_operator IN
        SELECT o.role_name FROM __SCHEMA__.taskhub_operator_roles AS o ORDER BY o.role_name
    LOOP
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = v_operator) THEN
            PERFORM __SCHEMA__.taskhub_set_operator_privileges(v_operator, true);
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_refresh_runtime_roles() FROM PUBLIC;
