-- Record every function and view of the schema as it is now (see
-- taskhub_definitions), with the revision the schema is at. The migration
-- runner calls it at the end of each run that applied a revision, never on a
-- run that found nothing to do: running `upgrade` again after a hand edit
-- must not bless the edit.
CREATE FUNCTION __SCHEMA__.taskhub_record_definitions()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_revision text;
    v_count    integer;
BEGIN
    SELECT string_agg(v.version_num, ',') INTO v_revision
      FROM __SCHEMA__.taskhub_pg_alembic_version AS v;
    DELETE FROM __SCHEMA__.taskhub_definitions;
    INSERT INTO __SCHEMA__.taskhub_definitions
           (object, kind, name, digest, security_definer, settings, revision)
    SELECT d.object, d.kind, d.name, d.digest, d.security_definer, d.settings, v_revision
      FROM __SCHEMA__.taskhub_live_definitions() AS d;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_record_definitions() FROM PUBLIC;
