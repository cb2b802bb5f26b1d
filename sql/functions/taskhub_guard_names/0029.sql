-- Whether the runtime DDL guard names p_role for this hub. A guarded runtime
-- role gets CREATE only while it does: the guard is what makes that CREATE
-- safe (the duroxide runtime's connect asks for it; real DDL is refused).
--
-- The guard is the database's (schema taskhub_guard, installed by a role that
-- may create event triggers: provider/deploy/ddl_guard.py), and counts only
-- while its event trigger is enabled and runs taskhub_guard.refuse_runtime_ddl(),
-- and the role that owns that function owns the list too: an event trigger
-- needs a role that may create one (the one that installed the guard, or the
-- service's superuser it acts through), so a schema named taskhub_guard that
-- a lesser role made guards nothing. Until a guard
-- step moves it there, the hub's own guard of revisions 0005-0028 counts too
-- (its event trigger and the list its function keeps).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_guard_names(p_role text)
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_named boolean := false;
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
                '                WHERE hub_schema = $1 AND role_name = $2)'
           INTO v_named USING '__SCHEMA_NAME__', p_role;
        IF v_named THEN
            RETURN true;
        END IF;
    END IF;
    RETURN EXISTS (SELECT 1
                     FROM pg_event_trigger AS e
                    WHERE e.evtname = __SCHEMA__.taskhub_runtime_ddl_guard_name()
                      AND e.evtenabled <> 'D')
       AND p_role = ANY (__SCHEMA__.taskhub_guard_roles_of(
                             '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure));
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_guard_names(text) FROM PUBLIC;
