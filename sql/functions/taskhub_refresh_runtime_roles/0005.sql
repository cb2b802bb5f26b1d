-- Re-grant every runtime role, so that objects a later revision added are
-- covered, and take PUBLIC's default EXECUTE off functions created since.
-- The migrations call it at the end of every run.
CREATE FUNCTION __SCHEMA__.taskhub_refresh_runtime_roles()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role  __SCHEMA__.taskhub_runtime_roles;
    v_count integer := 0;
BEGIN
    PERFORM __SCHEMA__.taskhub_revoke_public_execute();
    FOR v_role IN SELECT * FROM __SCHEMA__.taskhub_runtime_roles ORDER BY role_name LOOP
        IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = v_role.role_name) THEN
            PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
                v_role.role_name, v_role.runtime_ddl, v_role.had_database_create, true);
            v_count := v_count + 1;
        END IF;
    END LOOP;
    PERFORM __SCHEMA__.taskhub_rebuild_runtime_ddl_guard();
    RETURN v_count;
END;
$$;

