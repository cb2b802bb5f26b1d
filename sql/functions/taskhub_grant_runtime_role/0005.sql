-- Make p_role a runtime role of this task hub (again: a second call replaces
-- the first, so a changed runtime_ddl takes effect).
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
    IF p_runtime_ddl IS NULL OR p_runtime_ddl NOT IN ('guarded', 'none') THEN
        RAISE EXCEPTION 'runtime_ddl must be ''guarded'' or ''none'', not %', coalesce(p_runtime_ddl, 'NULL')
              USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_role FROM pg_roles AS r WHERE r.rolname = p_role;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'role % does not exist', coalesce(p_role, 'NULL')
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
    IF p_role = current_user
       OR pg_has_role(v_role.oid, current_user, 'MEMBER')
       OR (NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
           AND pg_has_role(current_user, v_role.oid, 'MEMBER'))
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
    IF p_runtime_ddl = 'guarded'
       AND NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
    THEN
        RAISE EXCEPTION 'runtime_ddl ''guarded'' needs an event trigger, which only a superuser can create'
              USING ERRCODE = '42501',
                    HINT = 'Run this migration as a superuser, or pass runtime_ddl=none '
                           '(enough for the taskhub provider; the duroxide 0.2.2 runtime then cannot connect).';
    END IF;

    DELETE FROM __SCHEMA__.taskhub_runtime_roles AS r WHERE r.role_name = p_role
    RETURNING * INTO v_previous;
    IF FOUND THEN
        PERFORM __SCHEMA__.taskhub_set_runtime_privileges(
            p_role, v_previous.runtime_ddl, v_previous.had_database_create, false);
    END IF;
    -- CREATE on the database that another hub's grant gave does not count as
    -- the role's own: the last hub to let the role go takes it back.
    INSERT INTO __SCHEMA__.taskhub_runtime_roles (role_name, runtime_ddl, had_database_create)
    VALUES (p_role, p_runtime_ddl,
            coalesce(v_previous.had_database_create,
                     has_database_privilege(v_role.oid, current_database(), 'CREATE')
                     AND NOT __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role)))
    RETURNING had_database_create INTO v_had_database_create;
    PERFORM __SCHEMA__.taskhub_set_runtime_privileges(p_role, p_runtime_ddl, v_had_database_create, true);
    PERFORM __SCHEMA__.taskhub_rebuild_runtime_ddl_guard();
END;
$$;

