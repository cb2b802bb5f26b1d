-- Make p_role a runtime role of this task hub (again: a second call replaces
-- the first, so a changed runtime_ddl takes effect). The owner's step, in
-- the owner's session: a guarded role needs the database's DDL guard to name
-- it first (taskhub_guard_names), which a role that may create event
-- triggers does with `taskhub-pg grant-runtime-role` without calling this.
CREATE FUNCTION __SCHEMA__.taskhub_grant_runtime_role(p_role text, p_runtime_ddl text DEFAULT 'guarded')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_role                pg_roles;
    v_previous            __SCHEMA__.taskhub_runtime_roles;
    v_owned               text;
    v_had_database_create boolean;
BEGIN
    PERFORM __SCHEMA__.taskhub_refuse_privileged_caller();
    IF p_role IS NULL OR p_runtime_ddl IS NULL THEN
        RAISE EXCEPTION '% must not be NULL', CASE WHEN p_role IS NULL THEN 'p_role' ELSE 'p_runtime_ddl' END
              USING ERRCODE = '22004';
    END IF;
    IF p_runtime_ddl NOT IN ('guarded', 'none') THEN
        RAISE EXCEPTION 'runtime_ddl must be ''guarded'' or ''none'', not %', p_runtime_ddl
              USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_role FROM pg_roles AS r WHERE r.rolname = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % does not exist', p_role
              USING ERRCODE = '42704', HINT = 'Create it first: CREATE ROLE ... LOGIN.';
    END IF;
    IF v_role.rolsuper THEN
        RAISE EXCEPTION 'role % is a superuser: it cannot be limited to what the runtime needs', p_role
              USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT 1
                 FROM pg_roles AS predefined
                WHERE predefined.rolname = 'pg_write_all_data'
                  AND pg_has_role(v_role.oid, predefined.oid, 'MEMBER'))
    THEN
        RAISE EXCEPTION 'role % is a member of pg_write_all_data: it cannot be limited to what the runtime needs',
                        p_role
              USING ERRCODE = '22023';
    END IF;
    -- What a role can use or become, not any membership: see taskhub_shares_rights.
    IF p_role = current_user
       OR __SCHEMA__.taskhub_shares_rights(v_role.rolname, current_user)
       OR (NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
           AND __SCHEMA__.taskhub_shares_rights(current_user, v_role.rolname))
    THEN
        RAISE EXCEPTION 'role % shares its rights with the migrating role %: use a separate role for the runtime',
                        p_role, current_user
              USING ERRCODE = '22023';
    END IF;
    -- An owner keeps every right on what it owns, whatever we grant.
    SELECT o.what INTO v_owned
      FROM (SELECT 'schema ' || n.nspname AS what
              FROM pg_namespace AS n
             WHERE n.oid = '__SCHEMA__'::regnamespace AND n.nspowner = v_role.oid
            UNION ALL
            SELECT 'relation ' || c.oid::regclass::text
              FROM pg_class AS c
             WHERE c.relnamespace = '__SCHEMA__'::regnamespace AND c.relowner = v_role.oid
            UNION ALL
            SELECT 'function ' || p.oid::regprocedure::text
              FROM pg_proc AS p
             WHERE p.pronamespace = '__SCHEMA__'::regnamespace AND p.proowner = v_role.oid) AS o
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'role % owns % (and maybe more) in this schema, so it cannot be limited', p_role, v_owned
              USING ERRCODE = '22023',
                    HINT = 'Give the schema and its objects to the migrating role first, e.g. '
                           'REASSIGN OWNED BY ' || quote_ident(p_role) || ' TO ' || quote_ident(current_user)
                           || ' (run it in this database).';
    END IF;
    -- The CREATE a guarded role gets is safe only behind the guard, which
    -- this role cannot change: a role that may create event triggers names
    -- the role in it first.
    IF p_runtime_ddl = 'guarded' AND NOT __SCHEMA__.taskhub_guard_names(p_role) THEN
        RAISE EXCEPTION 'runtime_ddl ''guarded'' needs the DDL guard to name role %', p_role
              USING ERRCODE = '42501',
                    HINT = 'A role that may create event triggers (a superuser, or the admin of a '
                           'managed service that allows them) runs taskhub-pg grant-runtime-role '
                           || p_role || ' --schema __SCHEMA_NAME__ first; or pass runtime_ddl=none '
                           '(no CREATE: the taskhub provider and the duroxide 0.2.2 runtime both '
                           'run on a hub that exists).';
    END IF;

    DELETE FROM __SCHEMA__.taskhub_runtime_roles AS r WHERE r.role_name = p_role
    RETURNING * INTO v_previous;
    IF FOUND THEN
        PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
            p_role, v_previous.runtime_ddl, v_previous.had_database_create, false);
    END IF;
    -- CREATE on the database that another hub's grant, or the DDL guard's
    -- step, gave does not count as the role's own: the last hub to let the
    -- role go takes it back.
    INSERT INTO __SCHEMA__.taskhub_runtime_roles (role_name, runtime_ddl, had_database_create)
    VALUES (p_role, p_runtime_ddl,
            coalesce(v_previous.had_database_create,
                     has_database_privilege(v_role.oid, current_database(), 'CREATE')
                     AND NOT __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role)
                     AND NOT __SCHEMA__.taskhub_guard_gave_database_create(p_role)))
    RETURNING had_database_create INTO v_had_database_create;
    PERFORM __SCHEMA__.taskhub_set_runtime_privileges(p_role, p_runtime_ddl, v_had_database_create, true);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_grant_runtime_role(text, text) FROM PUBLIC;
