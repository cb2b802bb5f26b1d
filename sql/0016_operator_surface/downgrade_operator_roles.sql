-- Take back what operator roles were given, then what this revision created.
DO $operators$
DECLARE
    v_role text;
BEGIN
    FOR v_role IN
        SELECT o.role_name
          FROM __SCHEMA__.taskhub_operator_roles AS o
          JOIN pg_catalog.pg_roles AS r ON r.rolname = o.role_name
    LOOP
        PERFORM __SCHEMA__.taskhub_set_operator_privileges(v_role, false);
    END LOOP;
END
$operators$;
DELETE FROM __SCHEMA__.taskhub_runtime_privileges
 WHERE object_kind = 'function' AND object_name = 'taskhub_find_instances';
DROP TABLE __SCHEMA__.taskhub_operator_roles;
DROP TABLE __SCHEMA__.taskhub_operator_privileges;
DROP INDEX IF EXISTS __SCHEMA__.taskhub_instances_created_idx;
