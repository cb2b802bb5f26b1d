"""The drift check: does the live schema still hold what its revision shipped?

    with privileged_session.one_session(url) as conn:
        report = check(conn, schema)     # report.problems == [] when nothing drifted
        repaired = repair(conn, schema)  # puts definitions, grants and the ledger back

Each runs on the caller's connection, a deploy verb's one session
(search_path pinned at startup, one server session: `one_session`).

`check` adds the revisions still pending to what the schema's own
taskhub_check_drift() names (sql/head/drift_check/): functions and views
that differ from the record the last migration run left, grants, the
_duroxide_migrations ledger and settings.

Besides the record, every function with a name the package uses is compared
with the bodies the package ships (provider/deploy/packaged_code.py): a
change that a later `taskhub_record_definitions()` re-blessed is still named
(`unpackaged`). The report also names the duroxide runtimes the
_duroxide_migrations ledger admits (provider/operations/runtime_ledger.py):
information, not drift. A session that can do more than the hub's owner
(provider/deploy/privileged_session.py) runs nothing the owner could have
changed: its check reads the catalogue alone (the functions' code), and its
repair is refused (the owner repairs its own hub).

`repair` re-applies, in one transaction, each drifted function and view from
the newest released SQL file at or below the installed revision that defines
it, with SECURITY DEFINER and the SET clauses the record holds; re-grants the
runtime roles, takes EXECUTE back from PUBLIC, and writes the ledger's
missing versions. It changes no queue, instance or history row, and never a
setting (an operator's choice: reported, not changed).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy import (
    function_history,
    migrate,
    packaged_code,
    privileged_session,
    turn_form,
    vouched_duroxide,
)
from provider.deploy.sql_files import is_downgrade_file, read_sql, released_files, render_text
from provider.deploy.version_table import VERSION_TABLE, installed_revision
from provider.operations import runtime_ledger
from provider.schema_name import quote_schema
from provider.standing import untrusted

# The drift a repair puts back; `setting` (an operator's row) and `pending`
# (run `upgrade`) it only reports.
DEFINITION_PROBLEMS = ("missing", "changed", "security_definer", "settings", "unpackaged")

_STATEMENTS = {
    "function": re.compile(
        r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\(.*?\$\$;[ \t]*$",
        flags=re.MULTILINE | re.DOTALL,
    ),
    "view": re.compile(
        r"^CREATE (?:OR REPLACE )?VIEW __SCHEMA__\.(\w+) AS.*?;[ \t]*$",
        flags=re.MULTILINE | re.DOTALL,
    ),
}


@dataclass(frozen=True)
class Problem:
    kind: str  # pending, not_migrated, missing, changed, security_definer, settings,
    #            unpackaged, grant, duroxide_ledger, setting, unrecorded
    object: str
    detail: str


@dataclass(frozen=True)
class Recorded:
    """A function or view as the last migration run recorded it."""

    kind: str
    name: str
    security_definer: bool | None
    settings: list[str]


@dataclass
class CheckReport:
    schema: str
    revision: str | None
    head: str
    problems: list[Problem] = field(default_factory=list)
    # Where the hub stands that is not drift (exit 0): who else can reach it.
    warnings: list[str] = field(default_factory=list)
    # A privileged session's check: the functions' code, from the catalogue
    # alone (the revision is in a table of the owner's, which it does not read).
    catalogue_only: bool = False
    # Which released runtimes the ledger admits (not drift); None when the
    # ledger was not read (a privileged session, a schema without a hub).
    runtimes: runtime_ledger.RuntimeAdmission | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "revision": self.revision,
            "head": self.head,
            "ok": self.ok,
            "problems": [asdict(problem) for problem in self.problems],
            "warnings": self.warnings,
            "catalogue_only": self.catalogue_only,
            "runtimes": self.runtimes.as_json() if self.runtimes else None,
        }


@dataclass
class RepairReport:
    repaired: list[Problem] = field(default_factory=list)
    remaining: list[Problem] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": not self.remaining,
            "repaired": [asdict(problem) for problem in self.repaired],
            "remaining": [asdict(problem) for problem in self.remaining],
        }


def _check_on(conn: psycopg.Connection[Any], schema: str) -> CheckReport:
    head = migrate.head_revision()
    report = CheckReport(schema, installed_revision(conn, schema), head)
    if report.revision is None:
        report.problems.append(Problem("not_migrated", schema, "no taskhub-pg revision applied"))
        return report
    if report.revision != head:
        report.problems.append(
            Problem("pending", f"revision {head}", f"installed {report.revision}: run upgrade")
        )
    if _has_drift_check(conn, schema):
        report.problems += _read_drift(conn, schema)
    else:
        report.problems.append(
            Problem("unrecorded", schema, "revisions before 0012 record no definitions")
        )
    recorded = {problem.object for problem in report.problems}
    report.problems += [p for p in _unpackaged(conn, schema) if p.object not in recorded]
    report.warnings = [
        *shared_database_warnings(conn, schema),
        *_runtime_roles_creating_in_public(conn, schema),
    ]
    report.runtimes = runtime_ledger.read(conn, schema)
    return report


_CREATE_IN_PUBLIC = """
SELECT r.role_name
  FROM {}.taskhub_runtime_roles AS r
 WHERE r.runtime_ddl = 'none'
   AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS role WHERE role.rolname = r.role_name)
   AND has_schema_privilege(r.role_name, 'public', 'CREATE')
 ORDER BY 1
"""


def _runtime_roles_creating_in_public(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """A runtime role without DDL that may still create tables in public, as
    every role may on PostgreSQL 14 (PUBLIC's default there). A warning, not
    drift: the right is the database's, outside the hub, and no repair of the
    hub takes it back. (A guarded role's DDL is refused by the guard anywhere
    in the database.)"""
    if schema == "public" or not _has_runtime_roles(conn, schema):
        return []
    rows = conn.execute(sql.SQL(_CREATE_IN_PUBLIC).format(sql.Identifier(schema))).fetchall()
    return [
        f"runtime role {name} has runtime_ddl none but may CREATE in schema public, through"
        " PUBLIC (its default before PostgreSQL 15): REVOKE CREATE ON SCHEMA public FROM PUBLIC"
        for (name,) in rows
    ]


def _has_runtime_roles(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", [f"{quote_schema(schema)}.taskhub_runtime_roles"]
    ).fetchone()
    return bool(row and row[0])


_SHARED = """
SELECT has_database_privilege('public', current_database(), 'CONNECT'),
       (SELECT count(*) FROM pg_catalog.pg_class AS c
         WHERE c.relnamespace = to_regnamespace(%(quoted)s)
           AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
           AND c.relname <> ALL (%(ours)s))
"""


def shared_database_warnings(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    """Who besides the hub's roles can reach it (docs/ops.md, "Shared
    databases"): every role that may connect can hold the hub's advisory
    keys, and a hub in `public` shares its schema with the application."""
    ours = sorted({*packaged_code.relations(), VERSION_TABLE})
    row = conn.execute(_SHARED, {"quoted": quote_schema(schema), "ours": ours}).fetchone()
    public_connect, others = (bool(row[0]), int(row[1])) if row else (False, 0)
    warnings = []
    if public_connect:
        warnings.append(
            "PUBLIC may CONNECT to this database: any role can hold the hub's advisory keys"
            " (its call gate, migration lock, instance locks) and notify its wakeup channel;"
            " REVOKE CONNECT ON DATABASE ... FROM PUBLIC and grant it to the roles that need it"
        )
    if schema == "public" and others:
        warnings.append(
            f"the hub lives in schema public beside {others} other table(s) or view(s):"
            " give it a schema of its own (--schema)"
        )
    return warnings


_LIVE_FUNCTIONS = """
SELECT format('function %%s(%%s)', p.proname, pg_get_function_identity_arguments(p.oid)),
       p.proname, l.lanname, md5(p.prosrc),
       md5(replace(p.prosrc, quote_ident(%(schema)s) || '.', '__SCHEMA__.')),
       coalesce(p.proconfig, '{}'), p.prokind
  FROM pg_catalog.pg_proc AS p
  JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
 WHERE p.pronamespace = to_regnamespace(%(quoted)s) AND p.proname = ANY (%(names)s)
 ORDER BY 1
"""


def _unpackaged(conn: psycopg.Connection[Any], schema: str) -> list[Problem]:
    """Functions with a packaged name whose code the package does not ship
    (a catalogue read: it runs nothing of the hub's)."""
    shipped = packaged_code.functions(schema)
    rows = conn.execute(
        _LIVE_FUNCTIONS,
        {"schema": schema, "quoted": quote_schema(schema), "names": sorted(shipped)},
    ).fetchall()
    problems = []
    for obj, name, language, body, normalized, settings, kind in rows:
        ours = packaged_code.Body(language, body) in shipped[name]
        duroxides = f"{name} {language} {normalized}" in vouched_duroxide.BODIES
        foreign = [s for s in settings if not packaged_code.is_packaged_setting(s)]
        if kind != "f" or not (ours or duroxides):
            problems.append(Problem("unpackaged", obj, "its code is not what the package ships"))
        elif foreign:
            problems.append(
                Problem("unpackaged", obj, f"SET {', '.join(foreign)}: not what the package ships")
            )
    return problems


def check(conn: psycopg.Connection[Any], schema: str) -> CheckReport:
    """Everything that differs from what the installed revision shipped."""
    found = privileged_session.standing(conn, schema)
    privileged_session.require_clean(found)
    if not found.hub_exists:
        return CheckReport(
            schema,
            None,
            migrate.head_revision(),
            [Problem("not_migrated", schema, "no taskhub-pg revision applied")],
        )
    if not untrusted(found):
        return _check_on(conn, schema)
    # The catalogue alone: the hub's tables, views and functions are the
    # owner's, and would run with this session's rights.
    report = CheckReport(
        schema, None, migrate.head_revision(), _unpackaged(conn, schema), catalogue_only=True
    )
    owner = found.owner or "its owner"
    report.warnings.append(
        f"this session can do more than {owner}, the hub's owner, so it read the"
        " catalogue alone (the code of the hub's functions); the recorded definitions,"
        f" grants and ledger are checked by {owner} or an operator role"
    )
    return report


def released_statements(kind: str, name: str, revision: str) -> list[str]:
    """Every CREATE statement of `kind` and `name` that a hub at `revision`
    runs (__SCHEMA__ still in it): a function's from its history
    (provider/deploy/function_history.py); a view's from the newest revision
    file at or below `revision` that defines one (a downgrade's file puts an
    older version back: it is never what a revision runs)."""
    if kind == "function":
        version = function_history.version_at(name, revision)
        if version is None:
            return []
        text = read_sql(version.path)
        return [m.group(0) for m in _STATEMENTS[kind].finditer(text) if m.group(1) == name]
    shipped = [file for file in released_files(up_to=revision) if not is_downgrade_file(file[1])]
    for number in sorted({number for number, _ in shipped}, reverse=True):
        for _, path in (file for file in shipped if file[0] == number):
            text = read_sql(path)
            found = [m.group(0) for m in _STATEMENTS[kind].finditer(text) if m.group(1) == name]
            if found:
                return found
    return []


def render(statement: str, schema: str, turn_form: str = "json") -> str:
    """As render_sql renders a file, as CREATE OR REPLACE."""
    text = render_text(statement, schema, turn_form)
    return re.sub(r"^CREATE (FUNCTION|VIEW) ", r"CREATE OR REPLACE \1 ", text)


def repair(conn: psycopg.Connection[Any], schema: str) -> RepairReport:
    """Put back what check found, in one transaction (see the module's doc)."""
    with conn.transaction():
        found = privileged_session.standing(conn, schema)
        privileged_session.require_clean(found)
        privileged_session.refuse_privileged(found, "repair")
        before = _check_on(conn, schema)
        revision = before.revision
        if revision is None or not _has_drift_check(conn, schema):
            return RepairReport(remaining=before.problems)
        drifted = sorted({p.object for p in before.problems if p.kind in DEFINITION_PROBLEMS})
        # The fetch keeps the form it hands over: its runtimes have it prepared.
        form = turn_form.current_form(conn, schema) or "json"
        for obj in drifted:
            definition = _recorded(conn, schema, obj)
            if definition is None:
                continue
            for statement in released_statements(definition.kind, definition.name, revision):
                _apply_definition(conn, schema, definition, render(statement, schema, form))
            if definition.kind == "function":
                _restore_attributes(conn, schema, obj, definition)
        _restore_grants_and_ledger(conn, schema)
        after = _check_on(conn, schema)
    remaining = set(after.problems)
    return RepairReport(
        repaired=[p for p in before.problems if p not in remaining],
        remaining=after.problems,
    )


# The gate's statements: the schema's drift check, its record of each
# definition, and the pieces of a repair.


def _has_drift_check(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute(
        "SELECT to_regproc(%s) IS NOT NULL", [f'"{schema}".taskhub_check_drift']
    ).fetchone()
    return bool(row and row[0])


def _read_drift(conn: psycopg.Connection[Any], schema: str) -> list[Problem]:
    query = sql.SQL("SELECT problem, object, detail FROM {}.taskhub_check_drift() ORDER BY 1, 2")
    rows = conn.execute(query.format(sql.Identifier(schema))).fetchall()
    return [Problem(str(kind), str(name), str(detail)) for kind, name, detail in rows]


def _recorded(conn: psycopg.Connection[Any], schema: str, obj: str) -> Recorded | None:
    row = conn.execute(
        sql.SQL(
            "SELECT kind, name, security_definer, settings FROM {}.taskhub_definitions"
            " WHERE object = %s"
        ).format(sql.Identifier(schema)),
        [obj],
    ).fetchone()
    if row is None:
        return None
    return Recorded(str(row[0]), str(row[1]), row[2], list(row[3] or []))


def _apply_definition(
    conn: psycopg.Connection[Any], schema: str, definition: Recorded, statement: str
) -> None:
    """Run one rendered CREATE OR REPLACE of a released file."""
    try:
        with conn.transaction():
            conn.execute(sql.SQL(statement))
    except psycopg.errors.InvalidTableDefinition:
        # A view whose columns a hand edit changed: OR REPLACE cannot, drop it.
        conn.execute(
            sql.SQL("DROP VIEW {}.{}").format(
                sql.Identifier(schema), sql.Identifier(definition.name)
            )
        )
        conn.execute(sql.SQL(statement))


def _restore_attributes(
    conn: psycopg.Connection[Any], schema: str, obj: str, definition: Recorded
) -> None:
    """SECURITY DEFINER and the SET clauses as recorded (revisions after a
    function's file may have changed them with ALTER FUNCTION)."""
    signature = conn.execute(
        "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
        " WHERE p.pronamespace = %s::regnamespace"
        "   AND format('function %%s(%%s)', p.proname,"
        "              pg_get_function_identity_arguments(p.oid)) = %s",
        [quote_schema(schema), obj],
    ).fetchone()
    if signature is None:
        return
    function = sql.SQL(signature[0])
    security = "SECURITY DEFINER" if definition.security_definer else "SECURITY INVOKER"
    conn.execute(sql.SQL("ALTER FUNCTION {} {}").format(function, sql.SQL(security)))
    conn.execute(sql.SQL("ALTER FUNCTION {} RESET ALL").format(function))
    # Only what the package sets: a recorded row is the owner's to write.
    for setting in filter(packaged_code.is_packaged_setting, definition.settings):
        name, _, value = setting.partition("=")
        # The value as the catalogue lists it: a list such as search_path must
        # not be quoted as one string.
        conn.execute(
            sql.SQL("ALTER FUNCTION {} SET {} = {}").format(
                function,
                sql.Identifier(name),
                sql.SQL(value),
            )
        )


def _restore_grants_and_ledger(conn: psycopg.Connection[Any], schema: str) -> None:
    """Re-grant every runtime role, take EXECUTE back from PUBLIC, and write
    the versions _duroxide_migrations lacks."""
    q = sql.Identifier(schema)
    conn.execute(sql.SQL("SELECT {}.taskhub_refresh_runtime_roles()").format(q))
    conn.execute(sql.SQL("SELECT {}.taskhub_revoke_public_execute()").format(q))
    conn.execute(
        sql.SQL(
            "INSERT INTO {0}._duroxide_migrations (version, name)"
            " SELECT v, format('%s_provided_by_taskhub_pg', lpad(v::text, 4, '0'))"
            "   FROM unnest({0}.taskhub_duroxide_versions()) AS v"
            " ON CONFLICT (version) DO NOTHING"
        ).format(q)
    )
