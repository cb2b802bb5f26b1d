-- Take back everything taskhub_grant_runtime_role gave p_role. Returns
-- whether p_role was a runtime role.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_revoke_runtime_role(p_role text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_previous __SCHEMA__.taskhub_runtime_roles;
BEGIN
    IF p_role IS NULL THEN
        RAISE EXCEPTION 'p_role must not be NULL' USING ERRCODE = '22004';
    END IF;
    -- Off the guard whatever the owner's record says (a change only when
    -- the guard names it: then, as to put it there, a superuser's step).
    PERFORM __SCHEMA__.taskhub_rebuild_runtime_ddl_guard(p_remove => p_role);
    DELETE FROM __SCHEMA__.taskhub_runtime_roles AS r WHERE r.role_name = p_role
    RETURNING * INTO v_previous;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = p_role) THEN
        PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
            p_role, v_previous.runtime_ddl, v_previous.had_database_create, false);
    END IF;
    RETURN true;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_revoke_runtime_role(text) FROM PUBLIC;
