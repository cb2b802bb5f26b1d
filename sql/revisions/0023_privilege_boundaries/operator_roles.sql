-- taskhub-pg 0023: each operator role gets what the list above names, and
-- loses what revisions 0016-0022 gave it beyond: EXECUTE on the functions
-- that take a work item or a delay, and the SELECT that their GRANT ... ON
-- ALL TABLES IN SCHEMA gave it, at every migration run, on the schema's
-- tables that are not the hub's (an application's, in `public`). That SELECT
-- is taken back wherever this role (or a role it acts for) granted it: a
-- grant made since by hand, by the same role, cannot be told apart from it.
DO $operators$
DECLARE
    v_hub_relations text[];
    v_role          text;
    v_role_oid      oid;
    v_target        text;
BEGIN
    -- The list is read on its own, then matched against the catalogue: on a
    -- Citus hub it is a distributed table (taskhub_set_operator_privileges).
    v_hub_relations := ARRAY(SELECT o.object_name
                               FROM __SCHEMA__.taskhub_operator_privileges AS o
                              WHERE o.object_kind = 'table' AND o.privilege = 'SELECT');
    FOR v_role IN SELECT o.role_name FROM __SCHEMA__.taskhub_operator_roles AS o ORDER BY 1 LOOP
        SELECT r.oid INTO v_role_oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = v_role;
        CONTINUE WHEN NOT FOUND;
        FOR v_target IN
            SELECT p.oid::regprocedure::text
              FROM pg_catalog.pg_proc AS p
             WHERE p.pronamespace = '__SCHEMA__'::regnamespace
               AND p.proname IN ('enqueue_orchestrator_work',
                                 'taskhub_enqueue_traced_orchestrator_work', 'abandon_work_item')
        LOOP
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', v_target, v_role);
        END LOOP;
        FOR v_target IN
            SELECT c.oid::regclass::text
              FROM pg_catalog.pg_class AS c
             WHERE c.relnamespace = '__SCHEMA__'::regnamespace
               AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
               AND c.relname <> ALL (v_hub_relations)
               AND EXISTS (SELECT 1
                             FROM pg_catalog.aclexplode(c.relacl) AS a
                            WHERE a.grantee = v_role_oid AND a.privilege_type = 'SELECT'
                              AND pg_catalog.pg_has_role(a.grantor, 'USAGE'))
        LOOP
            EXECUTE format('REVOKE SELECT ON TABLE %s FROM %I', v_target, v_role);
        END LOOP;
        PERFORM __SCHEMA__.taskhub_set_operator_privileges(v_role, true);
    END LOOP;
END
$operators$;
