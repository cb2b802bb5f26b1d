-- Place this hub on a Citus cluster by schema-based sharding: the whole
-- schema goes to one node (citus_schema_distribute), so every statement of
-- every procedure runs on that one node. Citus's own functions then place,
-- rebalance and move hubs (docs/scale-out.md).
--
-- Run by the migration runner with `-x citus=schema` (and again after every
-- run that applied a revision to a distributed hub). Idempotent. Refused
-- (0A000), changing nothing, when the Citus extension is not in this
-- database.
--
-- The hot path plans with plan_cache_mode = force_generic_plan, on Citus as
-- on plain PostgreSQL: since revision 0022 its statements each read or write
-- one table with no INSERT ... SELECT, which Citus plans once per session and
-- runs on the node like a plain statement. (Revision 0014 reset the setting,
-- because Citus cannot plan an INSERT ... SELECT with parameters as a generic
-- plan; a hub distributed before 0022 gets it back here.) The helpers the hot
-- path calls that do hold an INSERT ... SELECT (kv merges, dead letters) plan
-- with custom plans instead: a function's SET reaches the functions it calls.
CREATE FUNCTION __SCHEMA__.taskhub_distribute_on_citus()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_function regprocedure;
    v_name     text;
    v_set      integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'citus=schema needs the Citus extension in this database'
            USING ERRCODE = '0A000',
                  HINT = 'CREATE EXTENSION citus on the coordinator, add its workers, and run '
                         'the migration there; or migrate without citus=schema';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_dist_schema WHERE schemaid = '__SCHEMA__'::regnamespace) THEN
        PERFORM citus_schema_distribute('__SCHEMA__'::regnamespace);
    END IF;
    FOREACH v_name IN ARRAY ARRAY['fetch_orchestration_item', 'ack_orchestration_item',
                                  'fetch_work_item', 'ack_worker'] LOOP
        FOR v_function IN
            SELECT p.oid::regprocedure
              FROM pg_proc AS p
             WHERE p.pronamespace = '__SCHEMA__'::regnamespace
               AND p.proname = v_name
               AND NOT coalesce('plan_cache_mode=force_generic_plan' = ANY (p.proconfig), false)
        LOOP
            EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = force_generic_plan',
                           v_function);
            v_set := v_set + 1;
        END LOOP;
    END LOOP;
    FOR v_function IN
        SELECT p.oid::regprocedure
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND p.proname IN ('taskhub_apply_kv_mutations', 'taskhub_bury_orchestrator_messages',
                             'taskhub_bury_work_item')
           AND NOT coalesce('plan_cache_mode=force_custom_plan' = ANY (p.proconfig), false)
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET plan_cache_mode = force_custom_plan', v_function);
    END LOOP;
    RETURN format('schema %s distributed; generic plans set back on %s functions',
                  '__SCHEMA_NAME__', v_set);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_distribute_on_citus() FROM PUBLIC;
