-- Take back what operator roles were given (the DDL that follows is one
-- statement per file: Citus forwards a DROP INDEX's whole text to the workers).
DO $operators$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN SELECT o.role_name FROM __SCHEMA__.taskhub_operator_roles AS o LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS r WHERE r.rolname = v_role) THEN
            PERFORM __SCHEMA__.taskhub_set_operator_privileges(v_role, false);
        END IF;
    END LOOP;
END
$operators$;
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_find_instances';
