-- Grant (p_grant) or take back what an operator role may do: USAGE on the
-- schema, SELECT on every table and view, and the rows of
-- taskhub_operator_privileges. Nothing else: no queue write, no fetch or ack.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_operator_privileges(p_role text, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_verb    text := CASE WHEN p_grant THEN 'GRANT' ELSE 'REVOKE' END;
    v_towards text := CASE WHEN p_grant THEN 'TO' ELSE 'FROM' END;
    v_needed  record;
    v_target  text;
BEGIN
    EXECUTE format('%s USAGE ON SCHEMA __SCHEMA__ %s %I', v_verb, v_towards, p_role);
    EXECUTE format('%s SELECT ON ALL TABLES IN SCHEMA __SCHEMA__ %s %I', v_verb, v_towards, p_role);
    -- The list is read on its own, then matched against the catalogue: on a
    -- Citus hub it is a distributed table, and a join with pg_proc or
    -- pg_class would run on the worker holding it, against that catalogue.
    FOR v_needed IN
        SELECT o.object_kind, o.object_name, o.privilege,
               coalesce(' (' || (SELECT string_agg(quote_ident(col), ', ')
                                   FROM unnest(o.columns) AS col) || ')', '') AS columns
          FROM __SCHEMA__.taskhub_operator_privileges AS o
    LOOP
        -- Every function of that name (an overload a revision adds is covered).
        FOR v_target IN
            SELECT 'FUNCTION ' || p.oid::regprocedure::text
              FROM pg_proc AS p
             WHERE v_needed.object_kind = 'function'
               AND p.pronamespace = '__SCHEMA__'::regnamespace
               AND p.proname = v_needed.object_name
            UNION ALL
            SELECT 'TABLE ' || c.oid::regclass::text
              FROM pg_class AS c
             WHERE v_needed.object_kind = 'table'
               AND c.relnamespace = '__SCHEMA__'::regnamespace
               AND c.relname = v_needed.object_name
        LOOP
            EXECUTE format('%s %s%s ON %s %s %I', v_verb, v_needed.privilege, v_needed.columns,
                           v_target, v_towards, p_role);
        END LOOP;
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_operator_privileges(text, boolean) FROM PUBLIC;
