"""A privileged session's fence: what a superuser's step runs first, so that
it runs only code the package ships.

Who is privileged. A hub's objects belong to its owner (the role that
migrated it), who may rewrite any of them at any time. A session that can do
more than that owner (a superuser, or another login that is a member of the
owner's role, such as the admin that created it) would lend those rights to
whatever owner code it ran: a helper
redefined to `ALTER ROLE owner SUPERUSER`, a trigger planted on a table the
step writes, a row of definitions the step executes. The session's own
login counts, not its current role: `SET ROLE owner` is no boundary, since
code running after it may `RESET ROLE`. A session that logged in as the
owner, or on a hub whose owner is a superuser, is not privileged: it gains
nothing.

What the fence does, first in each transaction of a privileged session
(provider/deploy/runner.py, provider/deploy/runtime_role.py, gate.py, turn_form.py):

1. pins the transaction's search_path to pg_catalog, pg_temp;
2. locks the hub's tables ROW EXCLUSIVE (the runtime's own mode: live traffic
   goes on, while no trigger, rule, policy, default or index can be added
   until the step commits) and the table of set-aside definitions SHARE ROW
   EXCLUSIVE (its rows are executed: none may be added);
3. before its first DDL, looks at the event triggers, which run their
   function as whoever runs DDL, this step included: one whose function a
   role other than a superuser or the session's may rewrite is refused, but
   for the hub's own DDL guard where a managed service's admin made it
   (docs/platforms.md), which is turned off until 4 and 5 are done, then
   back on as it was;
4. takes every function with a packaged name that a non-superuser owns
   (ALTER FUNCTION ... OWNER TO the session's role): from here on the owner
   can neither replace nor alter it;
5. then checks, and refuses in one line naming the first object that fails:
   every such function is one the package ships (its language, body and SET
   clauses, provider/deploy/packaged_code.py) or one the released duroxide
   runtime creates (provider/deploy/vouched_duroxide.py); every table is a
   plain table with no trigger, rule, row security, inheritance, foreign
   referrer, or default, constraint or index calling a function or operator
   outside pg_catalog and the checked functions, and no column of a type
   outside pg_catalog; every set-aside definition is one of duroxide's.

The hand-back, last in each such transaction, gives the functions and
relations with packaged names that the session's role now owns to the hub's
owner, except the runtime DDL guard's function while an event trigger runs
it (an event trigger runs its function for everyone, superusers included).

Both are DO blocks, so a `--sql` script carries them too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from provider.deploy import packaged_code, session_pinning, vouched_duroxide
from provider.deploy.version_table import VERSION_TABLE
from provider.schema_name import quote_schema

SET_ASIDE_TABLE = "taskhub_set_aside_functions"
# The transaction-local setting that tells the hand-back whom to give back to.
FENCED_OWNER = "taskhub.fenced_owner"


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _text_array(values: list[str]) -> str:
    inner = ",\n          ".join(_literal(value) for value in sorted(values))
    return f"ARRAY[\n          {inner}]::text[]"


def _packaged_bodies(schema: str) -> list[str]:
    return [
        f"{name} {body.language} {body.md5}"
        for name, bodies in packaged_code.functions(schema).items()
        for body in bodies
    ]


def hub_owner_expression(quoted_schema: str) -> str:
    """The hub's owner: its version table's, else its instances', else the schema's."""
    return f"""coalesce(
        (SELECT c.relowner FROM pg_catalog.pg_class AS c
          WHERE c.oid = pg_catalog.to_regclass('{quoted_schema}.{VERSION_TABLE}'::text)),
        (SELECT c.relowner FROM pg_catalog.pg_class AS c
          WHERE c.oid = pg_catalog.to_regclass('{quoted_schema}.instances'::text)),
        (SELECT n.nspowner FROM pg_catalog.pg_namespace AS n
          WHERE n.oid = pg_catalog.to_regnamespace('{quoted_schema}'::text)))"""


def privileged_expression(quoted_schema: str) -> str:
    """True when this session logged in as a role that can do more than the
    hub's owner: a superuser, or another member of the owner's role, while
    that owner is no superuser (pg_stat_activity keeps the login, which SET
    ROLE and SET SESSION AUTHORIZATION do not change). An operator or a
    runtime role is not: the owner's code gives it nothing it lacks."""
    owner = hub_owner_expression(quoted_schema)
    return f"""(SELECT NOT o.rolsuper AND o.oid <> l.oid
               AND (l.rolsuper OR pg_catalog.pg_has_role(l.oid, o.oid, 'MEMBER'))
          FROM pg_catalog.pg_roles AS o, pg_catalog.pg_stat_activity AS a,
               pg_catalog.pg_roles AS l
         WHERE o.oid = {owner} AND a.pid = pg_catalog.pg_backend_pid()
           AND l.oid = a.usesysid)"""


def fence_statement(schema: str) -> str:
    """The fence, for the first statement of a transaction: a no-op, but for
    the search_path, in a session that is not privileged (the check itself
    is parsed only when it runs: it is long)."""
    quoted = quote_schema(schema)
    return f"""DO $fence$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    IF pg_catalog.to_regnamespace('{quoted}') IS NOT NULL
       AND coalesce({privileged_expression(quoted)}, false) THEN
        EXECUTE {_literal(_fence_body(schema))};
    END IF;
END
$fence$"""


def _fence_body(schema: str) -> str:
    """The fence's work, in a privileged session."""
    quoted = quote_schema(schema)
    names = sorted(packaged_code.functions(schema))
    tables = sorted(
        {name for name, kind in packaged_code.relations().items() if kind == "table"}
        | {VERSION_TABLE}
    )
    settings = sorted(packaged_code.PACKAGED_SETTING_NAMES)
    return f"""DO $checks$
DECLARE
    v_schema   regnamespace := pg_catalog.to_regnamespace('{quoted}');
    v_names    text[] := {_text_array(names)};
    v_tables   text[] := {_text_array(tables)};
    v_owner    regrole;
    v_object   record;
    v_bad      text;
    v_paused   text[] := '{{}}';  -- event triggers turned off until the checks are done
    v_enabled  text[] := '{{}}';  -- and how each was enabled
BEGIN
    v_owner := ({hub_owner_expression(quoted)})::regrole;
    PERFORM set_config('{FENCED_OWNER}', v_owner::text, true);

    -- 1. Nothing can be added to the tables until the step commits.
    FOR v_object IN
        SELECT c.oid::regclass AS relation, c.relname
          FROM pg_class AS c
         WHERE c.relnamespace = v_schema AND c.relname = ANY (v_tables)
         ORDER BY c.relname
    LOOP
        EXECUTE format('LOCK TABLE %s IN %s MODE', v_object.relation,
                       CASE WHEN v_object.relname = '{SET_ASIDE_TABLE}'
                            THEN 'SHARE ROW EXCLUSIVE' ELSE 'ROW EXCLUSIVE' END);
    END LOOP;

    -- 2. An event trigger runs its function as whoever runs DDL, this step
    --    included, from its first ALTER FUNCTION on. Where a role that is
    --    neither a superuser nor this session's may rewrite that function, it
    --    is refused; the hub's own guard, whose function a managed service's
    --    admin owns where it made the guard, is off until its function is
    --    taken and checked.
    FOR v_object IN
        SELECT e.evtname, e.evtenabled, p.oid::regprocedure AS function, r.rolname AS owner,
               p.pronamespace = v_schema AND p.proname = ANY (v_names) AS packaged
          FROM pg_event_trigger AS e
          JOIN pg_proc AS p ON p.oid = e.evtfoid
          JOIN pg_roles AS r ON r.oid = p.proowner
         WHERE e.evtenabled <> 'D'
           AND NOT r.rolsuper AND r.rolname <> current_user
         ORDER BY e.evtname
    LOOP
        IF NOT v_object.packaged THEN
            RAISE EXCEPTION 'taskhub-pg: event trigger % runs %, which role % may change: a '
                            'privileged step runs only packaged code', v_object.evtname,
                            v_object.function, v_object.owner
                  USING ERRCODE = '42501',
                        HINT = 'Turn it off (ALTER EVENT TRIGGER ... DISABLE) before a '
                               'superuser runs DDL in this database, then check its function '
                               'and give it to a superuser, or drop it.';
        END IF;
        BEGIN
            EXECUTE format('ALTER EVENT TRIGGER %I DISABLE', v_object.evtname);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'taskhub-pg: role % may not turn off event trigger % for this step, '
                            'and role % may change its function: connect as the hub''s owner '
                            '%, or as a superuser', current_user, v_object.evtname,
                            v_object.owner, v_owner
                  USING ERRCODE = '42501';
        END;
        v_paused := v_paused || v_object.evtname::text;
        v_enabled := v_enabled || v_object.evtenabled::text;
    END LOOP;

    -- 3. Nobody else may change the functions until it commits.
    FOR v_object IN
        SELECT p.oid::regprocedure AS function
          FROM pg_proc AS p
          JOIN pg_roles AS r ON r.oid = p.proowner
         WHERE p.pronamespace = v_schema AND p.proname = ANY (v_names)
           AND NOT r.rolsuper AND r.rolname <> current_user
    LOOP
        BEGIN
            EXECUTE format('ALTER FUNCTION %s OWNER TO %I', v_object.function, current_user);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'taskhub-pg: role % may not take function % for this step: connect '
                            'as the hub''s owner %, or as a superuser', current_user,
                            v_object.function, v_owner
                  USING ERRCODE = '42501';
        END;
    END LOOP;

    -- 4. Only code the package ships (or duroxide 0.2.2's own).
    SELECT format('function %s', p.oid::regprocedure) INTO v_bad
      FROM pg_proc AS p
      JOIN pg_language AS l ON l.oid = p.prolang
     WHERE p.pronamespace = v_schema AND p.proname = ANY (v_names)
       AND (p.prokind <> 'f'
            OR NOT (concat_ws(' ', p.proname, l.lanname, md5(p.prosrc))
                        = ANY ({_text_array(_packaged_bodies(schema))})
                    OR concat_ws(' ', p.proname, l.lanname,
                                 md5(replace(p.prosrc, quote_ident('{schema}') || '.',
                                             '__SCHEMA__.')))
                        = ANY ({_text_array(sorted(vouched_duroxide.BODIES))}))
            OR EXISTS (SELECT 1 FROM unnest(p.proconfig) AS s(setting)
                        WHERE s.setting <> '{packaged_code.PINNED_SEARCH_PATH}'
                          AND split_part(s.setting, '=', 1) <> ALL ({_text_array(settings)})))
     ORDER BY p.proname
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'taskhub-pg: % is not what the package ships: a privileged step runs '
                        'only packaged code', v_bad
              USING ERRCODE = '42501',
                    HINT = 'Find who changed it; taskhub-pg repair, run as the hub''s owner, '
                           'puts the packaged definition back.';
    END IF;

    -- 5. Touching a table runs nothing but the checked functions.
    SELECT format('table %s: %s', c.oid::regclass, problem.what) INTO v_bad
      FROM pg_class AS c
     CROSS JOIN LATERAL (
        SELECT 'not a plain table' AS what WHERE c.relkind NOT IN ('r', 'p')
        UNION ALL
        SELECT 'row security is on' WHERE c.relrowsecurity
        UNION ALL
        SELECT format('trigger %I', t.tgname) FROM pg_trigger AS t
         WHERE t.tgrelid = c.oid AND NOT t.tgisinternal
        UNION ALL
        SELECT format('rule %I', r.rulename) FROM pg_rewrite AS r WHERE r.ev_class = c.oid
        UNION ALL
        SELECT 'inheritance' FROM pg_inherits AS i
         WHERE c.oid IN (i.inhrelid, i.inhparent) AND c.relkind <> 'p'
        UNION ALL
        SELECT format('referenced by %s', f.conrelid::regclass) FROM pg_constraint AS f
          JOIN pg_class AS referrer ON referrer.oid = f.conrelid
         WHERE f.confrelid = c.oid AND f.contype = 'f'
           AND NOT (referrer.relnamespace = v_schema AND referrer.relname = ANY (v_tables))
        UNION ALL
        SELECT format('column %I of type %s', a.attname, a.atttypid::regtype)
          FROM pg_attribute AS a
          JOIN pg_type AS t ON t.oid = a.atttypid
          LEFT JOIN pg_type AS e ON e.oid = t.typelem AND t.typcategory = 'A'
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           AND (coalesce(e.typnamespace, t.typnamespace) <> 'pg_catalog'::regnamespace
                OR coalesce(e.typtype, t.typtype) = 'd')
        UNION ALL
        SELECT format('%s calls %s', pg_describe_object(d.classid, d.objid, d.objsubid),
                      pg_describe_object(d.refclassid, d.refobjid, 0))
          FROM pg_depend AS d
         WHERE d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass,
                                'pg_opclass'::regclass, 'pg_collation'::regclass,
                                'pg_type'::regclass)
           AND (   (d.classid = 'pg_attrdef'::regclass
                    AND d.objid IN (SELECT ad.oid FROM pg_attrdef AS ad WHERE ad.adrelid = c.oid))
                OR (d.classid = 'pg_constraint'::regclass
                    AND d.objid IN (SELECT k.oid FROM pg_constraint AS k WHERE k.conrelid = c.oid))
                OR (d.classid = 'pg_class'::regclass
                    AND d.objid IN (SELECT x.indexrelid FROM pg_index AS x
                                     WHERE x.indrelid = c.oid)))
           AND NOT EXISTS (
                SELECT 1 FROM pg_proc AS p
                 WHERE d.refclassid = 'pg_proc'::regclass AND p.oid = d.refobjid
                   AND (p.pronamespace = 'pg_catalog'::regnamespace
                        OR (p.pronamespace = v_schema AND p.proname = ANY (v_names))))
           AND NOT EXISTS (
                SELECT 1 FROM pg_operator AS o
                 WHERE d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
                   AND o.oprnamespace = 'pg_catalog'::regnamespace)
           AND NOT EXISTS (
                SELECT 1 FROM pg_opclass AS oc
                 WHERE d.refclassid = 'pg_opclass'::regclass AND oc.oid = d.refobjid
                   AND oc.opcnamespace = 'pg_catalog'::regnamespace)
           AND NOT EXISTS (
                SELECT 1 FROM pg_collation AS co
                 WHERE d.refclassid = 'pg_collation'::regclass AND co.oid = d.refobjid
                   AND co.collnamespace = 'pg_catalog'::regnamespace)
           AND NOT EXISTS (
                SELECT 1 FROM pg_type AS ty
                 WHERE d.refclassid = 'pg_type'::regclass AND ty.oid = d.refobjid
                   AND (ty.typnamespace = 'pg_catalog'::regnamespace OR ty.typrelid = c.oid))
     ) AS problem
     WHERE c.relnamespace = v_schema AND c.relname = ANY (v_tables)
     ORDER BY c.relname
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'taskhub-pg: % (not what the package ships): a privileged step runs '
                        'only packaged code', v_bad
              USING ERRCODE = '42501',
                    HINT = 'Find who changed it and take it away, as the hub''s owner.';
    END IF;

    -- 6. A downgrade to base executes these: only duroxide's own definitions.
    IF to_regclass('{quoted}.{SET_ASIDE_TABLE}') IS NOT NULL THEN
        SELECT format('%s(%s)', s.function_name, s.identity_args) INTO v_bad
          FROM {quoted}.{SET_ASIDE_TABLE} AS s
         WHERE md5(replace(s.definition, quote_ident('{schema}') || '.', '__SCHEMA__.'))
               <> ALL ({_text_array(sorted(vouched_duroxide.DEFINITIONS))})
         ORDER BY 1
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'taskhub-pg: the set-aside definition of % in %.{SET_ASIDE_TABLE} '
                            'is not duroxide 0.2.2''s: a privileged step runs only packaged code',
                            v_bad, '{schema}'
                  USING ERRCODE = '42501',
                        HINT = 'Find who wrote it and delete the row, as the hub''s owner.';
        END IF;
    END IF;

    -- 7. The guard on again, as it was: its function is checked, and this session's.
    FOR v_index IN 1 .. cardinality(v_paused) LOOP
        EXECUTE format('ALTER EVENT TRIGGER %I ENABLE%s', v_paused[v_index],
                       CASE v_enabled[v_index] WHEN 'A' THEN ' ALWAYS'
                                               WHEN 'R' THEN ' REPLICA' ELSE '' END);
    END LOOP;
END
$checks$"""


def hand_back_statement(schema: str) -> str:
    """The hand-back, for the last statement of a privileged transaction."""
    quoted = quote_schema(schema)
    names = sorted(packaged_code.functions(schema))
    relations = sorted(set(packaged_code.relations()) | {VERSION_TABLE})
    return f"""DO $hand_back$
DECLARE
    v_schema regnamespace := pg_catalog.to_regnamespace('{quoted}');
    v_owner  text := NULLIF(pg_catalog.current_setting('{FENCED_OWNER}', true), '');
    v_object record;
BEGIN
    IF v_owner IS NULL OR v_schema IS NULL THEN
        RETURN;
    END IF;
    FOR v_object IN
        SELECT 'FUNCTION ' || p.oid::regprocedure::text AS what
          FROM pg_proc AS p
         WHERE p.pronamespace = v_schema
           AND p.proname = ANY ({_text_array(names)})
           AND p.proowner = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user)
           AND NOT EXISTS (SELECT 1 FROM pg_event_trigger AS e WHERE e.evtfoid = p.oid)
        UNION ALL
        SELECT CASE c.relkind WHEN 'v' THEN 'VIEW ' WHEN 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END
               || c.oid::regclass::text
          FROM pg_class AS c
         WHERE c.relnamespace = v_schema
           AND c.relname = ANY ({_text_array(relations)})
           AND c.relowner = (SELECT r.oid FROM pg_roles AS r WHERE r.rolname = current_user)
    LOOP
        EXECUTE format('ALTER %s OWNER TO %s', v_object.what, v_owner);
    END LOOP;
    PERFORM set_config('{FENCED_OWNER}', '', true);
END
$hand_back$"""


PINNED_SEARCH_PATH = "SET search_path = pg_catalog, pg_temp"


def pin_search_path(conn: psycopg.Connection[Any]) -> None:
    """For the session's first statement: an unqualified name then never finds
    a function or operator a lesser role created (pg_catalog comes first)."""
    conn.execute(PINNED_SEARCH_PATH)
    if not conn.autocommit:
        conn.commit()


def pin_search_path_on_one_session(conn: psycopg.Connection[Any], url: str) -> None:
    """pin_search_path for a deploy verb, which runs several transactions on
    one session: refused in one line, before anything is set, behind a
    transaction pooler (provider/deploy/session_pinning.py)."""
    session_pinning.pin(conn, url, {}, "refused: this verb runs on one session; its connection")
    pin_search_path(conn)


@contextmanager
def fenced_transaction(conn: psycopg.Connection[Any], schema: str) -> Iterator[None]:
    """One transaction of a step on the hub in `schema`: the fence first, the
    hand-back last (both nothing in a session that is not privileged)."""
    with conn.transaction():
        conn.execute(fence_statement(schema))
        yield
        conn.execute(hand_back_statement(schema))


def privileged_query(schema: str) -> str:
    """One row: the hub's owner when this session can do more than it (a
    privileged session), else NULL."""
    quoted = quote_schema(schema)
    return (
        f"SELECT CASE WHEN {privileged_expression(quoted)}"
        f" THEN ({hub_owner_expression(quoted)})::regrole::text END"
    )


def is_privileged(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """The hub's owner when this session can do more than it, else None."""
    row = conn.execute(privileged_query(schema)).fetchone()
    return None if row is None or row[0] is None else str(row[0])
