-- taskhub-pg 0005: runtime roles.
--
-- `python -m provider upgrade --runtime-role R` (Alembic: `-x runtime_role=R`)
-- calls taskhub_grant_runtime_role('R'). The role gets USAGE on the schema,
-- EXECUTE on the runtime procedures and SELECT on the few tables the duroxide
-- runtime reads with inline SQL (taskhub_runtime_privileges lists them all).
--
-- The duroxide 0.2.2 runtime needs one more thing. Each time it connects, its
-- migration runner issues `CREATE SCHEMA IF NOT EXISTS` (for a schema other
-- than public) and `CREATE TABLE IF NOT EXISTS _duroxide_migrations`, and
-- PostgreSQL checks the CREATE privilege before it checks whether the object
-- exists. So in the default mode, runtime_ddl = 'guarded', the role also gets
-- CREATE on the schema (and on the database, for a schema other than public),
-- and an event trigger refuses every statement of the role that would really
-- create something: the runtime's no-op statements pass, real DDL fails.
-- runtime_ddl = 'none' grants no CREATE at all; the taskhub provider needs
-- none, but then the duroxide 0.2.2 runtime cannot connect.

CREATE TABLE __SCHEMA__.taskhub_runtime_roles (
    role_name           text        PRIMARY KEY,
    runtime_ddl         text        NOT NULL CHECK (runtime_ddl IN ('guarded', 'none')),
    -- Whether the role could already create schemas in this database before
    -- any task hub granted it: then revoking leaves that privilege alone.
    had_database_create boolean     NOT NULL,
    granted_at          timestamptz NOT NULL DEFAULT now()
);

-- The event-trigger function of the DDL guard. The guarded roles are a
-- setting of the function itself (taskhub_rebuild_runtime_ddl_guard sets
-- them), not a table: the trigger fires for every role in the database, and
-- most of them may not read this schema. (Only a superuser may set such a
-- setting, as only a superuser may create the event trigger: the function
-- starts without it.)
CREATE FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl()
RETURNS event_trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_command_tag text;
BEGIN
    -- A CREATE ... IF NOT EXISTS that found its object reports no command.
    SELECT c.command_tag INTO v_command_tag
      FROM pg_event_trigger_ddl_commands() AS c
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1
                 FROM pg_roles AS guarded
                WHERE guarded.rolname = ANY (
                          coalesce(nullif(current_setting('taskhub.guarded_roles', true), ''), '{}')::text[])
                  AND pg_has_role(current_user, guarded.oid, 'MEMBER'))
       AND NOT (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
    THEN
        RAISE EXCEPTION 'taskhub-pg: role % is a task-hub runtime role and may not run DDL (%)',
                        current_user, v_command_tag
              USING ERRCODE = '42501',
                    HINT = 'Schema changes belong to the migrations (alembic upgrade), run as the owner.';
    END IF;
END;
$$;

-- Name of this schema's event trigger (event triggers are per database).
CREATE FUNCTION __SCHEMA__.taskhub_runtime_ddl_guard_name()
RETURNS text
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT 'taskhub_ddl_guard_' || left(md5('__SCHEMA_NAME__'), 16)
$$;

-- Point the guard at the currently guarded roles; drop it when there are none.
-- Changing the guard needs a superuser; a run that changes nothing (the
-- owner's next migration, say) touches nothing, so it needs no superuser.
CREATE FUNCTION __SCHEMA__.taskhub_rebuild_runtime_ddl_guard()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_trigger  text := __SCHEMA__.taskhub_runtime_ddl_guard_name();
    v_function regprocedure := '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure;
    v_roles    text[];
    v_current  text;
BEGIN
    SELECT coalesce(array_agg(r.role_name ORDER BY r.role_name), '{}') INTO v_roles
      FROM __SCHEMA__.taskhub_runtime_roles AS r
     WHERE r.runtime_ddl = 'guarded';
    SELECT c.setting INTO v_current
      FROM pg_proc AS p
     CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
     WHERE p.oid = v_function AND c.setting LIKE 'taskhub.guarded_roles=%';

    IF cardinality(v_roles) = 0 THEN
        IF EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
            EXECUTE format('DROP EVENT TRIGGER %I', v_trigger);
            -- Back to the schema's owner, whose migrations may drop it.
            EXECUTE format('ALTER FUNCTION %s OWNER TO %s', v_function,
                           (SELECT n.nspowner::regrole FROM pg_namespace AS n
                             WHERE n.oid = '__SCHEMA__'::regnamespace));
        END IF;
        IF v_current IS NOT NULL THEN
            EXECUTE format('ALTER FUNCTION %s RESET taskhub.guarded_roles', v_function);
        END IF;
        RETURN;
    END IF;
    IF v_current IS DISTINCT FROM 'taskhub.guarded_roles=' || v_roles::text THEN
        EXECUTE format('ALTER FUNCTION %s SET taskhub.guarded_roles = %L', v_function, v_roles);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtname = v_trigger) THEN
        -- An event-trigger function runs as whoever runs DDL, superusers
        -- included: it must not stay changeable by a non-superuser owner.
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', v_function, current_user);
        EXECUTE format('CREATE EVENT TRIGGER %I ON ddl_command_end EXECUTE FUNCTION %s',
                       v_trigger, v_function);
    END IF;
END;
$$;

-- Whether a guarded runtime role of another task-hub schema in this database
-- still needs CREATE on the database.
CREATE FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(p_role text)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (
        SELECT 1
          FROM pg_proc AS p
          JOIN pg_namespace AS n ON n.oid = p.pronamespace
         CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
         WHERE p.proname = 'taskhub_refuse_runtime_ddl'
           AND n.nspname NOT IN ('public', '__SCHEMA_NAME__')
           AND c.setting LIKE 'taskhub.guarded_roles=%'
           AND p_role = ANY (substr(c.setting, length('taskhub.guarded_roles=') + 1)::text[]))
$$;

-- Grant (p_grant) or revoke everything a runtime role gets in this schema.
CREATE FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(
    p_role text, p_runtime_ddl text, p_had_database_create boolean, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_statement text := CASE WHEN p_grant THEN 'GRANT %s ON %s TO %I' ELSE 'REVOKE %s ON %s FROM %I' END;
    v_object    record;
BEGIN
    EXECUTE format(v_statement, 'USAGE', 'SCHEMA __SCHEMA__', p_role);
    FOR v_object IN
        SELECT rp.privilege, 'FUNCTION ' || p.oid::regprocedure::text AS target
          FROM __SCHEMA__.taskhub_runtime_privileges AS rp
          JOIN pg_proc AS p
            ON p.proname = rp.object_name AND p.pronamespace = '__SCHEMA__'::regnamespace
         WHERE rp.object_kind = 'function'
        UNION ALL
        SELECT rp.privilege, 'TABLE ' || c.oid::regclass::text
          FROM __SCHEMA__.taskhub_runtime_privileges AS rp
          JOIN pg_class AS c
            ON c.relname = rp.object_name AND c.relnamespace = '__SCHEMA__'::regnamespace
         WHERE rp.object_kind = 'table'
    LOOP
        EXECUTE format(v_statement, v_object.privilege, v_object.target, p_role);
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

-- Take PUBLIC's default EXECUTE off the functions of this schema. (Not
-- REVOKE ... ON ALL FUNCTIONS: that fails on the guard's function, which a
-- superuser owns while the guard is installed.)
CREATE FUNCTION __SCHEMA__.taskhub_revoke_public_execute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND EXISTS (SELECT 1
                         FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
                        WHERE a.grantee = 0)
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', v_fn.signature);
    END LOOP;
END;
$$;

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

-- Functions are executable by PUBLIC by default; in the public schema that
-- would be every role of the database. Only granted roles may call them.
-- (A per-schema ALTER DEFAULT PRIVILEGES cannot take this default away, so
-- taskhub_refresh_runtime_roles repeats it after every migration run.)
SELECT __SCHEMA__.taskhub_revoke_public_execute();
