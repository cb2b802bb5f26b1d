-- Save and drop every function of this schema with one of these names.
CREATE FUNCTION __SCHEMA__.taskhub_set_aside_functions(p_names text[])
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fn    record;
    v_count integer := 0;
BEGIN
    FOR v_fn IN
        SELECT p.oid, p.proname, pg_get_function_identity_arguments(p.oid) AS args
          FROM pg_proc AS p
         WHERE p.pronamespace = '__SCHEMA__'::regnamespace
           AND p.proname = ANY (p_names)
    LOOP
        INSERT INTO __SCHEMA__.taskhub_set_aside_functions (function_name, identity_args, definition)
        VALUES (v_fn.proname, v_fn.args, pg_get_functiondef(v_fn.oid));
        EXECUTE format('DROP FUNCTION __SCHEMA__.%I(%s)', v_fn.proname, v_fn.args);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;

