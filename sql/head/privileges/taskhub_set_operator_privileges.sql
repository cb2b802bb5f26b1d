-- Grant (p_grant) or take back what an operator role may do: USAGE on the
-- schema, SELECT on every table and view, and the rows of
-- taskhub_operator_privileges. Nothing else: no queue write, no fetch or ack.
CREATE FUNCTION __SCHEMA__.taskhub_set_operator_privileges(p_role text, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_verb    text := CASE WHEN p_grant THEN 'GRANT' ELSE 'REVOKE' END;
    v_towards text := CASE WHEN p_grant THEN 'TO' ELSE 'FROM' END;
    v_needed  record;
BEGIN
    EXECUTE format('%s USAGE ON SCHEMA __SCHEMA__ %s %I', v_verb, v_towards, p_role);
    EXECUTE format('%s SELECT ON ALL TABLES IN SCHEMA __SCHEMA__ %s %I', v_verb, v_towards, p_role);
    FOR v_needed IN
        SELECT o.privilege, c.oid::regclass AS relation,
               coalesce(' (' || (SELECT string_agg(quote_ident(col), ', ')
                                   FROM unnest(o.columns) AS col) || ')', '') AS columns
          FROM __SCHEMA__.taskhub_operator_privileges AS o
          JOIN pg_class AS c
            ON c.relnamespace = '__SCHEMA__'::regnamespace AND c.relname = o.object_name
         WHERE o.object_kind = 'table'
    LOOP
        EXECUTE format('%s %s%s ON TABLE %s %s %I', v_verb, v_needed.privilege,
                       v_needed.columns, v_needed.relation, v_towards, p_role);
    END LOOP;
    -- Every function of that name (an overload a revision adds is covered).
    FOR v_needed IN
        SELECT p.oid::regprocedure AS signature
          FROM __SCHEMA__.taskhub_operator_privileges AS o
          JOIN pg_proc AS p
            ON p.pronamespace = '__SCHEMA__'::regnamespace AND p.proname = o.object_name
         WHERE o.object_kind = 'function'
    LOOP
        EXECUTE format('%s EXECUTE ON FUNCTION %s %s %I',
                       v_verb, v_needed.signature, v_towards, p_role);
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_operator_privileges(text, boolean) FROM PUBLIC;
