-- Take PUBLIC's default EXECUTE off the functions of this schema. (Not
-- REVOKE ... ON ALL FUNCTIONS: that fails on the guard's function, which a
-- superuser owns while the guard is installed.)
CREATE FUNCTION __SCHEMA__.taskhub_revoke_public_execute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND EXISTS (SELECT 1
                         FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
                        WHERE a.grantee = 0)
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', v_fn.signature);
    END LOOP;
END;
$$;

