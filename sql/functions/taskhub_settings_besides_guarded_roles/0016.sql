-- A function's SET clauses without the guard's list of roles, in their order.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_settings_besides_guarded_roles(p_settings text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(array_agg(s.setting ORDER BY s.position), '{}')
      FROM unnest(p_settings) WITH ORDINALITY AS s(setting, position)
     WHERE s.setting NOT LIKE 'taskhub.guarded_roles=%'
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_settings_besides_guarded_roles(text[]) FROM PUBLIC;
