-- taskhub-pg 0022, downgrade: the runtime DDL guard comes off the workers of
-- a distributed hub (0021 knows of the coordinator's only, and the workers'
-- triggers would hold on to the guard function when the hub is undistributed).
DO $down$
DECLARE
    v_node record;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_schema') IS NULL THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema
                    WHERE schemaid = '__SCHEMA__'::regnamespace) THEN
        RETURN;
    END IF;
    FOR v_node IN
        SELECT nodename || ':' || nodeport AS node, success, result
          FROM run_command_on_workers(format('DROP EVENT TRIGGER IF EXISTS %I',
                                             __SCHEMA__.taskhub_runtime_ddl_guard_name()))
    LOOP
        IF NOT v_node.success THEN
            RAISE EXCEPTION 'the runtime DDL guard could not be taken off worker %: %',
                            v_node.node, v_node.result;
        END IF;
    END LOOP;
END
$down$;
