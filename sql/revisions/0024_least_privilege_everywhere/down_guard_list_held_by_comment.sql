-- taskhub-pg 0024, downgrade, first: revision 0023 reads the DDL guard's list
-- of roles from its function's setting only. A guard that a role without a
-- superuser's rights made keeps its list in the function's comment, which
-- 0023 would not read: its runtime roles would keep CREATE with no guard.
-- Refused before anything changes, naming the way out.
DO $guard_list$
BEGIN
    IF obj_description('__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure, 'pg_proc')
       LIKE 'taskhub.guarded_roles=%' THEN
        RAISE EXCEPTION 'taskhub-pg: the runtime DDL guard of schema __SCHEMA_NAME__ keeps its '
                        'roles where revision 0023 cannot read them'
              USING ERRCODE = '55000',
                    HINT = 'Take the guarded roles back first (taskhub-pg revoke-runtime-role, or '
                           'grant them again with --runtime-ddl none), then downgrade.';
    END IF;
END
$guard_list$;
