-- What differs from what the installed revision shipped, one row per
-- problem, named so that an operator knows what to look at:
--
--   missing           a recorded function or view is gone
--   changed           its definition differs (a hand edit, an old dump)
--   security_definer  SECURITY DEFINER was added or taken away
--   settings          its SET clauses differ (the pinned search_path, ...)
--   grant             a runtime role lacks a privilege it needs, or PUBLIC
--                     may execute a function of the schema
--   duroxide_ledger   _duroxide_migrations lacks a version: the duroxide
--                     runtime would apply its own migration over ours
--   setting           a row of taskhub_settings is missing or out of range
--   unrecorded        nothing was recorded (no migration run since 0012)
--
-- No rows: no drift. `taskhub-pg check` adds the revisions still pending;
-- `taskhub-pg repair` puts functions, views, grants and the ledger back.
CREATE FUNCTION __SCHEMA__.taskhub_check_drift()
RETURNS TABLE (problem text, object text, detail text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH recorded AS (SELECT * FROM __SCHEMA__.taskhub_definitions),
    live AS (SELECT * FROM __SCHEMA__.taskhub_live_definitions()),
    compared AS (
        SELECT r.object, r.kind, r.revision,
               r.digest AS recorded_digest, l.digest AS live_digest,
               r.security_definer AS recorded_definer, l.security_definer AS live_definer,
               -- The list of a hub's own DDL guard of 0005-0028 is a grant's doing
               -- (and a guard step's, which moves it out), never drift.
               ARRAY(SELECT s FROM unnest(r.settings) AS s
                      WHERE s NOT LIKE 'taskhub.guarded_roles=%') AS recorded_settings,
               ARRAY(SELECT s FROM unnest(l.settings) AS s
                      WHERE s NOT LIKE 'taskhub.guarded_roles=%') AS live_settings,
               l.object IS NULL AS gone
          FROM recorded AS r
          LEFT JOIN live AS l ON l.object = r.object
    ),
    runtime_roles AS (
        SELECT rr.role_name, ro.oid IS NOT NULL AS role_exists
          FROM __SCHEMA__.taskhub_runtime_roles AS rr
          LEFT JOIN pg_roles AS ro ON ro.rolname = rr.role_name
    ),
    needed AS (
        SELECT rr.role_name, pr.object_kind, pr.object_name, pr.privilege, p.oid AS function_oid,
               c.oid AS table_oid
          FROM runtime_roles AS rr
         CROSS JOIN __SCHEMA__.taskhub_runtime_privileges AS pr
          LEFT JOIN pg_proc AS p
                 ON pr.object_kind = 'function'
                AND p.pronamespace = '__SCHEMA__'::regnamespace AND p.proname = pr.object_name
          LEFT JOIN pg_class AS c
                 ON pr.object_kind = 'table'
                AND c.relnamespace = '__SCHEMA__'::regnamespace AND c.relname = pr.object_name
         WHERE rr.role_exists
    ),
    settings AS (
        SELECT expected.name, s.value
          FROM (VALUES ('dead_letter_after_attempts'), ('transient_failure_policy'),
                       ('schedule_pause_after_failures'), ('priority_aging_ms'))
               AS expected (name)
          LEFT JOIN __SCHEMA__.taskhub_settings AS s ON s.name = expected.name
    )
    SELECT 'missing', c.object, format('dropped since revision %s recorded it', c.revision)
      FROM compared AS c WHERE c.gone
    UNION ALL
    SELECT 'changed', c.object, format('definition differs from revision %s', c.revision)
      FROM compared AS c WHERE NOT c.gone AND c.live_digest <> c.recorded_digest
    UNION ALL
    SELECT 'security_definer', c.object,
           CASE WHEN c.recorded_definer THEN 'no longer SECURITY DEFINER'
                ELSE 'now SECURITY DEFINER, which revision ' || c.revision || ' did not ship' END
      FROM compared AS c
     WHERE c.kind = 'function' AND NOT c.gone AND c.live_definer IS DISTINCT FROM c.recorded_definer
    UNION ALL
    SELECT 'settings', c.object,
           format('SET %s, expected %s',
                  coalesce(nullif(array_to_string(c.live_settings, ', '), ''), 'nothing'),
                  coalesce(nullif(array_to_string(c.recorded_settings, ', '), ''), 'nothing'))
      FROM compared AS c
     WHERE c.kind = 'function' AND NOT c.gone
       AND c.live_settings IS DISTINCT FROM c.recorded_settings
    UNION ALL
    SELECT 'grant', 'role ' || rr.role_name, 'a runtime role of this hub that no longer exists'
      FROM runtime_roles AS rr WHERE NOT rr.role_exists
    UNION ALL
    SELECT 'grant', format('function %s(%s)', p.proname, pg_get_function_identity_arguments(p.oid)),
           format('runtime role %s may not execute it', n.role_name)
      FROM needed AS n JOIN pg_proc AS p ON p.oid = n.function_oid
     WHERE NOT has_function_privilege(n.role_name, n.function_oid, 'EXECUTE')
    UNION ALL
    SELECT 'grant', 'table ' || n.object_name,
           format('runtime role %s may not %s it', n.role_name, n.privilege)
      FROM needed AS n
     WHERE n.table_oid IS NOT NULL
       AND NOT has_table_privilege(n.role_name, n.table_oid, n.privilege)
    UNION ALL
    SELECT 'grant', format('function %s(%s)', p.proname, pg_get_function_identity_arguments(p.oid)),
           'PUBLIC may execute it'
      FROM pg_proc AS p
     WHERE p.pronamespace = '__SCHEMA__'::regnamespace
       AND EXISTS (SELECT 1
                     FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
                    WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
    UNION ALL
    SELECT 'duroxide_ledger', format('_duroxide_migrations version %s', v),
           'missing: the duroxide runtime would apply its own migration over our procedures'
      FROM unnest(__SCHEMA__.taskhub_duroxide_versions()) AS v
     WHERE NOT EXISTS (SELECT 1 FROM __SCHEMA__._duroxide_migrations AS m WHERE m.version = v)
    UNION ALL
    SELECT 'setting', 'taskhub_settings ' || s.name,
           CASE
               WHEN s.value IS NULL THEN 'missing'
               WHEN s.name = 'dead_letter_after_attempts' AND s.value !~ '^[0-9]{1,9}$'
                   THEN format('%L is not a whole number', s.value)
               WHEN s.name = 'dead_letter_after_attempts'
                   THEN format('%s is not above the runtime''s max_attempts (10): the dead-letter'
                               ' table would take messages before its poison handling', s.value)
               WHEN s.name = 'schedule_pause_after_failures'
                   THEN format('%L is not a whole number of at least 1: read as 5', s.value)
               WHEN s.name = 'priority_aging_ms'
                   THEN format('%L is not a whole number from 0 to 86400000: read as 300000',
                               s.value)
               ELSE format('%L is neither retry nor record', s.value)
           END
      FROM settings AS s
     WHERE s.value IS NULL
        OR (s.name = 'dead_letter_after_attempts'
            AND CASE WHEN s.value ~ '^[0-9]{1,9}$' THEN s.value::integer <= 10 ELSE true END)
        OR (s.name = 'transient_failure_policy' AND s.value NOT IN ('retry', 'record'))
        OR (s.name = 'schedule_pause_after_failures'
            AND CASE WHEN s.value ~ '^[0-9]{1,9}$' THEN s.value::integer < 1 ELSE true END)
        OR (s.name = 'priority_aging_ms'
            AND CASE WHEN s.value ~ '^[0-9]{1,9}$' THEN s.value::integer > 86400000 ELSE true END)
    UNION ALL
    SELECT 'unrecorded', 'taskhub_definitions', 'no definitions recorded: run a migration'
     WHERE NOT EXISTS (SELECT 1 FROM recorded)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_check_drift() FROM PUBLIC;
