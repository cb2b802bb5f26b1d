-- Take back everything taskhub_grant_operator_role gave p_role (before
-- DROP ROLE, or to retire it). Returns whether p_role was an operator.
CREATE FUNCTION __SCHEMA__.taskhub_revoke_operator_role(p_role text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM __SCHEMA__.taskhub_refuse_privileged_caller();
    IF p_role IS NULL THEN
        RAISE EXCEPTION 'p_role must not be NULL' USING ERRCODE = '22004';
    END IF;
    DELETE FROM __SCHEMA__.taskhub_operator_roles AS r WHERE r.role_name = p_role;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = p_role) THEN
        PERFORM __SCHEMA__.taskhub_set_operator_privileges(p_role, false);
    END IF;
    RETURN true;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_revoke_operator_role(text) FROM PUBLIC;
