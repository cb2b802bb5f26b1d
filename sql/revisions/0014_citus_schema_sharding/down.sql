-- taskhub-pg 0014, downgrade: a hub distributed on Citus comes back to the
-- coordinator as plain tables first (citus_schema_undistribute), so that the
-- older revisions' downgrades, which alter tables in ways Citus does not
-- propagate, run as they do on PostgreSQL.
DO $undistribute$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema
                    WHERE schemaid = '__SCHEMA__'::regnamespace) THEN
            PERFORM citus_schema_undistribute('__SCHEMA__'::regnamespace);
        END IF;
    END IF;
END
$undistribute$;
