-- Re-create the functions with these names that were set aside.
CREATE FUNCTION __SCHEMA__.taskhub_restore_functions(p_names text[])
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fn    record;
    v_count integer := 0;
BEGIN
    FOR v_fn IN
        DELETE FROM __SCHEMA__.taskhub_set_aside_functions AS s
         WHERE s.function_name = ANY (p_names)
        RETURNING s.definition
    LOOP
        EXECUTE v_fn.definition;
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;
