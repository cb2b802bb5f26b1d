-- Whether CREATE on the database came to p_role from the database's DDL guard
-- (a guard step gives it where the role lacked it, and records so): then it
-- is not the role's own, and taking the role back may take it back. The
-- guard counts as taskhub_guard_names says.
CREATE FUNCTION __SCHEMA__.taskhub_guard_gave_database_create(p_role text)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_gave boolean := false;
BEGIN
    IF EXISTS (SELECT 1
                 FROM pg_event_trigger AS e
                 JOIN pg_proc AS p ON p.oid = e.evtfoid
                 JOIN pg_class AS c ON c.oid = to_regclass('taskhub_guard.guarded_roles')
                WHERE e.evtname = 'taskhub_runtime_ddl_guard'
                  AND e.evtenabled <> 'D'
                  AND p.pronamespace = to_regnamespace('taskhub_guard')
                  AND p.proname = 'refuse_runtime_ddl'
                  AND c.relowner = p.proowner)
    THEN
        -- Dynamic: the list may not exist when this function is created.
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM taskhub_guard.guarded_roles'
                '                WHERE role_name = $1 AND NOT had_database_create)'
           INTO v_gave USING p_role;
    END IF;
    RETURN v_gave;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_guard_gave_database_create(text) FROM PUBLIC;
