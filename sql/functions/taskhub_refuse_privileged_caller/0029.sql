-- Refuse a caller that can do more than the hub's owner: a superuser, or
-- another member of the owner's role (a managed service's admin), while the
-- owner is no superuser. The role functions call it first.
--
-- A courtesy, not a boundary. The owner may rewrite this function, the
-- functions that call it and anything they touch, so a privileged session
-- that calls a function of the hub runs the owner's code whatever this says.
-- The boundary is that privileged sessions call none
-- (provider/deploy/privileged_session.py, docs/security.md): this only turns
-- the psql route of an unchanged hub into a clear refusal.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_refuse_privileged_caller()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_login name;
    v_owner name;
    v_owner_oid oid := coalesce(
        (SELECT c.relowner FROM pg_class AS c
          WHERE c.oid = to_regclass('__SCHEMA__.taskhub_pg_alembic_version')),
        (SELECT n.nspowner FROM pg_namespace AS n WHERE n.oid = '__SCHEMA__'::regnamespace));
BEGIN
    -- pg_database_owner (schema public, from PostgreSQL 15): its one member.
    IF v_owner_oid = 'pg_database_owner'::regrole THEN
        SELECT d.datdba INTO v_owner_oid FROM pg_database AS d WHERE d.datname = current_database();
    END IF;
    SELECT l.rolname, o.rolname INTO v_login, v_owner
      FROM pg_stat_activity AS a
      JOIN pg_roles AS l ON l.oid = a.usesysid
      JOIN pg_roles AS o ON o.oid = v_owner_oid
     WHERE a.pid = pg_backend_pid()
       AND NOT o.rolsuper
       AND o.oid <> l.oid
       AND (l.rolsuper OR pg_has_role(l.oid, o.oid, 'MEMBER'));
    IF FOUND THEN
        RAISE EXCEPTION 'taskhub-pg: refused: this session (%) can do more than %, the owner of '
                        'the hub in schema __SCHEMA_NAME__, whose code this function is',
                        v_login, v_owner
              USING ERRCODE = '42501',
                    HINT = 'The owner runs its own grants (taskhub-pg grant-runtime-role, '
                           'connected as it); a superuser runs taskhub-pg grant-runtime-role for '
                           'the DDL guard alone, which calls nothing of the hub''s.';
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_refuse_privileged_caller() FROM PUBLIC;
