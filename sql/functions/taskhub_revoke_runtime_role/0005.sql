-- Take back everything taskhub_grant_runtime_role gave p_role. Returns
-- whether p_role was a runtime role.
CREATE FUNCTION __SCHEMA__.taskhub_revoke_runtime_role(p_role text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_previous __SCHEMA__.taskhub_runtime_roles;
BEGIN
    DELETE FROM __SCHEMA__.taskhub_runtime_roles AS r WHERE r.role_name = p_role
    RETURNING * INTO v_previous;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = p_role) THEN
        PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
            p_role, v_previous.runtime_ddl, v_previous.had_database_create, false);
    END IF;
    PERFORM __SCHEMA__.taskhub_rebuild_runtime_ddl_guard();
    RETURN true;
END;
$$;

