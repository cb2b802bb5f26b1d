"""Putting a new body on the runtime DDL guard's function, keeping its list.

While the guard is installed its function belongs to the role that created
the event trigger (a superuser, or a managed service's admin), so the hub's
owner cannot replace it; and CREATE OR REPLACE would drop the guard's list of
roles, a SET clause of the function. The statement built here replaces the
body only when the role running it may (it can use the function owner's
rights), puts the list back, and otherwise warns that the guard keeps its
body until that role runs `taskhub-pg grant-runtime-role`. Revision 0024
applies it frozen in its own files (sql/0024_*/); the role verbs apply it
with sql/head/'s body (provider/deploy/runtime_role.py).
"""

from __future__ import annotations

import re

from provider.deploy.sql_files import read_sql, render_text

GUARD_FILE = "head/privileges/taskhub_refuse_runtime_ddl.sql"
_CREATE = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.taskhub_refuse_runtime_ddl\(\).*?\$\$;",
    flags=re.MULTILINE | re.DOTALL,
)


def new_body_statement(create_function: str) -> str:
    """The DO block that puts `create_function` (a CREATE FUNCTION of the
    guard's function, __SCHEMA__ not yet rendered) in place."""
    create = re.sub(r"^CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", create_function.strip())
    return f"""DO $guard_body$
DECLARE
    v_function regprocedure := '__SCHEMA__.taskhub_refuse_runtime_ddl()'::regprocedure;
    v_owner    name;
    v_roles    text;
BEGIN
    SELECT r.rolname INTO v_owner
      FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_roles AS r ON r.oid = p.proowner
     WHERE p.oid = v_function;
    IF NOT pg_catalog.pg_has_role(current_user, v_owner, 'USAGE') THEN
        RAISE WARNING 'taskhub-pg: the runtime DDL guard of schema __SCHEMA_NAME__ belongs to %, '
                      'so it keeps its earlier body until % runs taskhub-pg grant-runtime-role',
                      v_owner, v_owner;
        RETURN;
    END IF;
    SELECT substr(c.setting, length('taskhub.guarded_roles=') + 1) INTO v_roles
      FROM pg_catalog.pg_proc AS p
     CROSS JOIN LATERAL unnest(p.proconfig) AS c(setting)
     WHERE p.oid = v_function AND c.setting LIKE 'taskhub.guarded_roles=%';
    EXECUTE $create$
{create}
$create$;
    IF v_roles IS NOT NULL THEN
        EXECUTE format('ALTER FUNCTION %s SET taskhub.guarded_roles = %L', v_function, v_roles);
    END IF;
END
$guard_body$"""


def head_body_statement(schema: str) -> str:
    """The guard's function as sql/head/ has it, rendered for `schema`."""
    found = _CREATE.search(read_sql(GUARD_FILE))
    if found is None:
        raise ValueError(f"{GUARD_FILE} defines no taskhub_refuse_runtime_ddl()")
    return render_text(new_body_statement(found.group(0)), schema)


def record_statement(schema: str) -> str:
    """The drift check's record of the guard's function follows its new body
    (a migration run records every definition at its end; a role verb does not)."""
    return render_text(
        """DO $record_guard$
BEGIN
    IF to_regproc('__SCHEMA__.taskhub_live_definitions') IS NOT NULL THEN
        UPDATE __SCHEMA__.taskhub_definitions AS d
           SET digest = l.digest
          FROM __SCHEMA__.taskhub_live_definitions() AS l
         WHERE d.object = l.object AND d.object = 'function taskhub_refuse_runtime_ddl()';
    END IF;
END
$record_guard$""",
        schema,
    )
