-- Place this hub on a Citus cluster by schema-based sharding: the whole
-- schema goes to one node (citus_schema_distribute), so every statement of
-- every procedure runs on that one node. Citus's own functions then place,
-- rebalance and move hubs (docs/scale-out.md).
--
-- Run by the migration runner with `-x citus=schema` (and again after every
-- run that applied a revision to a distributed hub, since replaced functions
-- come back with their SET clauses). Idempotent. Refused (0A000), changing
-- nothing, when the Citus extension is not in this database.
--
-- Citus cannot plan an INSERT ... SELECT with parameters as a generic plan
-- ("could not create distributed plan"), and the hot path plans with
-- plan_cache_mode = force_generic_plan for plain PostgreSQL: on a
-- distributed hub, the functions get PostgreSQL's default back (custom plans
-- first, a generic one when it is as good).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_distribute_on_citus()
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_function regprocedure;
    v_reset    integer := 0;
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
    FOR v_function IN
        SELECT p.oid::regprocedure
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND 'plan_cache_mode=force_generic_plan' = ANY (p.proconfig)
    LOOP
        EXECUTE format('ALTER FUNCTION %s RESET plan_cache_mode', v_function);
        v_reset := v_reset + 1;
    END LOOP;
    RETURN format('schema %s distributed; %s functions plan with custom plans',
                  '__SCHEMA_NAME__', v_reset);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_distribute_on_citus() FROM PUBLIC;
