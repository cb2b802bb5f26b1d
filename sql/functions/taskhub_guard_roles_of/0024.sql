-- The roles a runtime DDL guard's function refuses DDL to. The list is the
-- guard's own, changeable only by the role that made the guard: the
-- function's setting taskhub.guarded_roles where that role may put a custom
-- setting on a function (a superuser; any role before PostgreSQL 15), else
-- the function's comment, 'taskhub.guarded_roles={...}' (a managed
-- service's admin that may create event triggers, on 15 and later). None
-- while no event trigger runs the function: what its owner wrote there
-- before a guard was made is nobody's list (a superuser's grant must not
-- guard, and lock out of DDL, a role the schema's owner named).
CREATE FUNCTION __SCHEMA__.taskhub_guard_roles_of(p_function regprocedure)
RETURNS text[]
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
               WHEN NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtfoid = p_function)
               THEN '{}'::text[]
               ELSE coalesce(
                   (SELECT substr(c.setting, length('taskhub.guarded_roles=') + 1)::text[]
                      FROM pg_proc AS p
                     CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
                     WHERE p.oid = p_function
                       AND c.setting LIKE 'taskhub.guarded_roles=%'),
                   (SELECT substr(d.description, length('taskhub.guarded_roles=') + 1)::text[]
                      FROM pg_description AS d
                     WHERE d.objoid = p_function
                       AND d.classoid = 'pg_proc'::regclass
                       AND d.objsubid = 0
                       AND d.description LIKE 'taskhub.guarded_roles=%'),
                   '{}')
           END
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_guard_roles_of(regprocedure) FROM PUBLIC;
