-- taskhub-pg 0022, last step on a hub distributed by Citus: the hot path's
-- plan settings (and the helpers' custom plans) in this revision's own
-- transaction, so that no call meets the new bodies with the old settings
-- between this commit and the end of the run.
DO $citus$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema
                    WHERE schemaid = '__SCHEMA__'::regnamespace) THEN
            PERFORM __SCHEMA__.taskhub_distribute_on_citus();
        END IF;
    END IF;
END
$citus$;
