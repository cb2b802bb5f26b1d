-- The functions and views of this schema as the catalogue has them now, in
-- the form taskhub_definitions records them. A function's digest covers its
-- body, arguments, result, language and properties; SECURITY DEFINER and
-- its SET clauses are kept apart, so that a drift in them is named as such.
CREATE FUNCTION __SCHEMA__.taskhub_live_definitions()
RETURNS TABLE (object text, kind text, name text, digest text,
               security_definer boolean, settings text[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT format('function %s(%s)', p.proname, pg_get_function_identity_arguments(p.oid)),
           'function',
           p.proname::text,
           md5(concat_ws(E'\n', l.lanname, pg_get_function_result(p.oid),
                         p.provolatile, p.proisstrict, p.proleakproof, p.proparallel,
                         p.prosrc)),
           p.prosecdef,
           coalesce(p.proconfig, '{}')
      FROM pg_proc AS p
      JOIN pg_language AS l ON l.oid = p.prolang
     WHERE p.pronamespace = '__SCHEMA__'::regnamespace
    UNION ALL
    SELECT format('view %s', c.relname), 'view', c.relname::text,
           md5(pg_get_viewdef(c.oid, true)), NULL, NULL
      FROM pg_class AS c
     WHERE c.relnamespace = '__SCHEMA__'::regnamespace
       AND c.relkind = 'v'
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_live_definitions() FROM PUBLIC;
