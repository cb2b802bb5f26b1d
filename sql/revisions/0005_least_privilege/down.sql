-- taskhub-pg 0005 down: take back every runtime role's privileges, drop the
-- DDL guard, and give the procedures back their 0004 state (SECURITY INVOKER,
-- executable by PUBLIC).

DO $revoke$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN SELECT r.role_name FROM __SCHEMA__.taskhub_runtime_roles AS r LOOP
        PERFORM __SCHEMA__.taskhub_revoke_runtime_role(v_role);
    END LOOP;
    EXECUTE format('DROP EVENT TRIGGER IF EXISTS %I', __SCHEMA__.taskhub_runtime_ddl_guard_name());
END
$revoke$;

DROP FUNCTION __SCHEMA__.taskhub_refresh_runtime_roles();
DROP FUNCTION __SCHEMA__.taskhub_revoke_public_execute();
DROP FUNCTION __SCHEMA__.taskhub_revoke_runtime_role(text);
DROP FUNCTION __SCHEMA__.taskhub_grant_runtime_role(text, text);
DROP FUNCTION __SCHEMA__.taskhub_set_runtime_privileges(text, text, boolean, boolean);
DROP FUNCTION __SCHEMA__.taskhub_database_create_needed_elsewhere(text);
DROP FUNCTION __SCHEMA__.taskhub_rebuild_runtime_ddl_guard();
DROP FUNCTION __SCHEMA__.taskhub_runtime_ddl_guard_name();
DROP FUNCTION __SCHEMA__.taskhub_refuse_runtime_ddl();
DROP TABLE __SCHEMA__.taskhub_runtime_roles;

DO $invoker$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND p.prosecdef
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER', v_fn.signature);
    END LOOP;
END
$invoker$;
DROP TABLE __SCHEMA__.taskhub_runtime_privileges;

GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA __SCHEMA__ TO PUBLIC;
