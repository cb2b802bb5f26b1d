-- taskhub-pg 0006 downgrade: the payload columns stored as before, and the
-- procedures re-created from their released files run as their owner again
-- (as revision 0005 left them). Their grants were kept by CREATE OR REPLACE.
ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET STORAGE EXTENDED;
ALTER TABLE __SCHEMA__.history ALTER COLUMN event_data SET COMPRESSION DEFAULT;
ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET STORAGE EXTENDED;
ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET COMPRESSION DEFAULT;
ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET STORAGE EXTENDED;
ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET COMPRESSION DEFAULT;

DO $definer$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND p.proname IN (SELECT object_name
                               FROM __SCHEMA__.taskhub_runtime_privileges
                              WHERE object_kind = 'function')
           AND NOT p.prosecdef
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', v_fn.signature);
    END LOOP;
END
$definer$;
