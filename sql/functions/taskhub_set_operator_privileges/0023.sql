-- Grant (p_grant) or take back what an operator role may do: USAGE on the
-- schema and the rows of taskhub_operator_privileges, by name (SELECT on the
-- hub's own tables and views, EXECUTE on the functions the runbook calls,
-- UPDATE of a setting's value, DELETE of old shielded failures). Nothing
-- else: no other table of the schema, no queue write, no fetch or ack.
-- Taking back takes back exactly what granting gave.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_set_operator_privileges(p_role text, p_grant boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_verb      text := CASE WHEN p_grant THEN 'GRANT' ELSE 'REVOKE' END;
    v_towards   text := CASE WHEN p_grant THEN 'TO' ELSE 'FROM' END;
    v_needed    record;
    v_privilege text;
    v_columns   text;
    v_target    text;
BEGIN
    IF p_role IS NULL OR p_grant IS NULL THEN
        RAISE EXCEPTION 'p_role and p_grant must not be NULL' USING ERRCODE = '22004';
    END IF;
    EXECUTE format('%s USAGE ON SCHEMA __SCHEMA__ %s %I', v_verb, v_towards, p_role);
    -- The list is read on its own, then matched against the catalogue: on a
    -- Citus hub it is a distributed table, and a join with pg_proc or
    -- pg_class would run on the worker holding it, against that catalogue.
    FOR v_needed IN
        SELECT o.object_kind, o.object_name, o.privilege, o.columns
          FROM __SCHEMA__.taskhub_operator_privileges AS o
    LOOP
        -- Only these words reach the statement: a row's text is never SQL.
        v_privilege := CASE
            WHEN v_needed.object_kind = 'function' AND v_needed.privilege = 'EXECUTE' THEN 'EXECUTE'
            WHEN v_needed.object_kind = 'table' AND v_needed.privilege = 'SELECT' THEN 'SELECT'
            WHEN v_needed.object_kind = 'table' AND v_needed.privilege = 'UPDATE' THEN 'UPDATE'
            WHEN v_needed.object_kind = 'table' AND v_needed.privilege = 'DELETE' THEN 'DELETE'
        END;
        IF v_privilege IS NULL THEN
            RAISE EXCEPTION 'taskhub_operator_privileges: % on % % is not a privilege an operator is given',
                            v_needed.privilege, v_needed.object_kind, v_needed.object_name
                  USING ERRCODE = '22023';
        END IF;
        v_columns := coalesce(' (' || (SELECT string_agg(quote_ident(col), ', ')
                                         FROM unnest(v_needed.columns) AS col) || ')', '');
        -- Every function of that name (an overload a revision adds is covered);
        -- regprocedure and regclass print quoted names.
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
               AND c.relkind IN ('r', 'v', 'p')
        LOOP
            EXECUTE format('%s %s%s ON %s %s %I', v_verb, v_privilege, v_columns,
                           v_target, v_towards, p_role);
        END LOOP;
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_set_operator_privileges(text, boolean) FROM PUBLIC;
