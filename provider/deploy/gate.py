"""The deploy gate: does the live schema still hold what its revision shipped?

    report = check(url, schema)          # report.problems == [] when nothing drifted
    repaired = repair(url, schema)       # puts definitions, grants and the ledger back

`check` adds the revisions still pending to what the schema's own
taskhub_check_drift() names (sql/head/deploy_gate/): functions and views
that differ from the record the last migration run left, grants, the
_duroxide_migrations ledger and settings.

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

from provider.client import deploy_gate
from provider.client.deploy_gate import Problem
from provider.deploy import migrate
from provider.deploy.sql_files import released_folders, render_text

# The drift a repair puts back; `setting` (an operator's row) and `pending`
# (run `upgrade`) it only reports.
DEFINITION_PROBLEMS = ("missing", "changed", "security_definer", "settings")

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


@dataclass
class CheckReport:
    schema: str
    revision: str | None
    head: str
    problems: list[Problem] = field(default_factory=list)

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
    report = CheckReport(schema, deploy_gate.installed_revision(conn, schema), head)
    if report.revision is None:
        report.problems.append(Problem("not_migrated", schema, "no taskhub-pg revision applied"))
        return report
    if report.revision != head:
        report.problems.append(
            Problem("pending", f"revision {head}", f"installed {report.revision}: run upgrade")
        )
    if deploy_gate.has_drift_check(conn, schema):
        report.problems += deploy_gate.read_drift(conn, schema)
    else:
        report.problems.append(
            Problem("unrecorded", schema, "revisions before 0012 record no definitions")
        )
    return report


def check(url: str, schema: str) -> CheckReport:
    """Everything that differs from what the installed revision shipped."""
    with psycopg.connect(url, autocommit=True) as conn:
        return _check_on(conn, schema)


def released_statements(kind: str, name: str, revision: str) -> list[str]:
    """Every CREATE statement of `kind` and `name` in the newest released file
    at or below `revision` that defines one (__SCHEMA__ still in it)."""
    for folder in reversed(released_folders(up_to=revision)):
        for path in sorted(folder.glob("*.sql")):
            text = path.read_text(encoding="utf-8")
            found = [m.group(0) for m in _STATEMENTS[kind].finditer(text) if m.group(1) == name]
            if found:
                return found
    return []


def render(statement: str, schema: str) -> str:
    """As render_sql renders a file, as CREATE OR REPLACE."""
    text = render_text(statement, schema)
    return re.sub(r"^CREATE (FUNCTION|VIEW) ", r"CREATE OR REPLACE \1 ", text)


def repair(url: str, schema: str) -> RepairReport:
    """Put back what check found, in one transaction (see the module's doc)."""
    with psycopg.connect(url) as conn:
        before = _check_on(conn, schema)
        revision = before.revision
        if revision is None or not deploy_gate.has_drift_check(conn, schema):
            return RepairReport(remaining=before.problems)
        drifted = sorted({p.object for p in before.problems if p.kind in DEFINITION_PROBLEMS})
        for obj in drifted:
            definition = deploy_gate.recorded(conn, schema, obj)
            if definition is None:
                continue
            for statement in released_statements(definition.kind, definition.name, revision):
                deploy_gate.apply_definition(conn, schema, definition, render(statement, schema))
            if definition.kind == "function":
                deploy_gate.restore_attributes(conn, schema, obj, definition)
        deploy_gate.restore_grants_and_ledger(conn, schema)
        after = _check_on(conn, schema)
        conn.commit()
    remaining = set(after.problems)
    return RepairReport(
        repaired=[p for p in before.problems if p not in remaining],
        remaining=after.problems,
    )
