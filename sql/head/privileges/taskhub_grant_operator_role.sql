-- Make p_role an operator of this task hub: it may run the runbook
-- (docs/ops.md: check, inspect, prune, requeue, release-lease, cancel,
-- raise-event, delete-instance) and nothing more. Create the role first.
CREATE FUNCTION __SCHEMA__.taskhub_grant_operator_role(p_role text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role pg_roles;
BEGIN
    PERFORM __SCHEMA__.taskhub_refuse_privileged_caller();
    IF p_role IS NULL THEN
        RAISE EXCEPTION 'p_role must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT * INTO v_role FROM pg_roles AS r WHERE r.rolname = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % does not exist', p_role
              USING ERRCODE = '42704', HINT = 'Create it first: CREATE ROLE ... LOGIN.';
    END IF;
    IF v_role.rolsuper THEN
        RAISE EXCEPTION 'role % is a superuser: it cannot be limited to the runbook', p_role
              USING ERRCODE = '22023';
    END IF;
    -- A runtime role must not read every table: it would see more than the
    -- runtime needs, and the deploy gate could not tell its grants apart.
    IF EXISTS (SELECT 1 FROM __SCHEMA__.taskhub_runtime_roles AS r WHERE r.role_name = p_role) THEN
        RAISE EXCEPTION 'role % is a runtime role of this hub: use a separate role for operators',
                        p_role
              USING ERRCODE = '22023';
    END IF;
    IF p_role = current_user OR __SCHEMA__.taskhub_shares_rights(v_role.rolname, current_user) THEN
        RAISE EXCEPTION 'role % shares its rights with the migrating role %: use a separate role for operators',
                        p_role, current_user
              USING ERRCODE = '22023';
    END IF;
    INSERT INTO __SCHEMA__.taskhub_operator_roles (role_name) VALUES (p_role)
    ON CONFLICT (role_name) DO NOTHING;
    PERFORM __SCHEMA__.taskhub_set_operator_privileges(p_role, true);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_grant_operator_role(text) FROM PUBLIC;
