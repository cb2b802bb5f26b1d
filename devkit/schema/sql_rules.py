"""Rules that keep the SQL of sql/head/ ready for Citus (docs/scale-out.md),
checked as text, without a database, in milliseconds:

1. `no DML in a CTE`: no INSERT, UPDATE or DELETE inside a WITH. Citus plans
   a data-modifying CTE through intermediate results, and the claim failed
   that way on a distributed schema.
2. `table-reading helper in a statement`: a statement that reads or writes a
   table of the hub does not call a helper that reads a table itself (read it
   into a variable first): inside a statement pushed to a shard, Citus
   refuses the helper's query ("cannot execute a distributed query from a
   query on a shard").
3. `not by instance`: every UPDATE, DELETE and row-locking SELECT on an
   instance-keyed table names the instance (instance_id in its conditions),
   so that it routes to one shard when the hub is distributed by instance.
   Where the contract gives no instance (an ack by lock token alone), the
   statement says so in a comment with `not by instance:` and the reason.
   The worker queue is keyed by item, not by instance: the contract allows an
   item without an instance, names an item by its lock token, and a worker
   fetch takes any eligible item.
4. `subquery in an INSERT`: an INSERT ... VALUES has no subquery, in its
   values or its RETURNING: Citus refuses it ("subqueries are not supported
   within INSERT queries"). Ask in a statement of its own.

    python -m devkit.schema.sql_rules         # prints each violation; exit 1 if any
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from provider.deploy.resources import sql_dir

HEAD = "head"
INSTANCE_KEYED = (
    "orchestrator_queue",
    "instance_locks",
    "instances",
    "executions",
    "history",
    "kv_store",
    "kv_delta",
)
EXCEPTION_MARK = "not by instance:"

_FUNCTION = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\(.*?\bAS \$(\w*)\$(.*?)\$\2\$",
    flags=re.MULTILINE | re.DOTALL,
)
_TABLE = re.compile(r"^CREATE (?:UNLOGGED )?TABLE __SCHEMA__\.(\w+)", flags=re.MULTILINE)
_DML_IN_CTE = re.compile(
    r"\bAS\s*(?:NOT\s+)?(?:MATERIALIZED\s+)?\(\s*(INSERT|UPDATE|DELETE)\b", re.I
)


@dataclass(frozen=True)
class Violation:
    rule: str
    function: str
    statement: str

    def __str__(self) -> str:
        text = " ".join(self.statement.split())
        return f"{self.function}: {self.rule}: {text[:160]}"


def _without_strings(text: str) -> str:
    """Quoted literals blanked (same length), so that their words are not read as SQL."""
    return re.sub(r"'(?:[^']|'')*'", lambda m: "'" + " " * (len(m.group(0)) - 2) + "'", text)


def _statements(body: str) -> list[str]:
    """The body's statements, and apart from them the heads of IF, ELSIF,
    WHILE and FOR (up to their THEN or LOOP); comments kept. THEN and ELSE of
    a CASE expression, and anything in parentheses, stay inside their
    statement."""
    code = _without_strings(re.sub(r"--[^\n]*", lambda m: " " * len(m.group(0)), body))
    parts, start, depth, cases = [], 0, 0, 0
    for match in _TOKEN.finditer(code):
        token = match.group(0).upper()
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0 and token == "CASE" and not _ends_block(code, match.start()):
            cases += 1
        elif depth == 0 and token == "END" and cases and not _ends_block(code, match.end(), 1):
            cases -= 1
        elif depth == 0 and (token == ";" or (cases == 0 and token in _HEAD_ENDS)):
            parts.append(body[start : match.start()])
            start = match.end()
    parts.append(body[start:])
    return [part for part in parts if part.strip()]


_TOKEN = re.compile(r"[();]|\b\w+\b")
_HEAD_ENDS = {"THEN", "ELSE", "LOOP", "BEGIN"}


def _ends_block(code: str, at: int, direction: int = -1) -> bool:
    """Whether the CASE at `at` is `END CASE`, or the END before `at` is
    followed by IF, LOOP or CASE (a plpgsql block's end, not an expression's)."""
    if direction < 0:
        return bool(re.search(r"\bEND\s*$", code[:at], re.I))
    return bool(re.match(r"\s*(IF|LOOP|CASE)\b", code[at:], re.I))


def _code(statement: str) -> str:
    return _without_strings(re.sub(r"--[^\n]*", " ", statement))


def head_sql(root: Path | None = None) -> dict[str, str]:
    """Every file of sql/head/, by path."""
    base = root or sql_dir() / HEAD
    return {str(path.relative_to(base)): path.read_text() for path in sorted(base.rglob("*.sql"))}


def check(files: dict[str, str]) -> list[Violation]:
    tables = {name for text in files.values() for name in _TABLE.findall(text)}
    functions = {
        match.group(1): match.group(3)
        for text in files.values()
        for match in _FUNCTION.finditer(text)
    }
    touches_table = re.compile(
        r"__SCHEMA__\.(?:" + "|".join(sorted(tables)) + r")\b" if tables else r"(?!x)x"
    )
    readers = {name for name, body in functions.items() if touches_table.search(_code(body))}
    # A call has no space before its parenthesis (a table's column list has).
    calls_reader = re.compile(r"__SCHEMA__\.(?:" + "|".join(sorted(readers)) + r")\(")
    keyed = "|".join(INSTANCE_KEYED)
    modifies_keyed = re.compile(
        rf"\b(?:UPDATE|DELETE\s+FROM)\s+__SCHEMA__\.({keyed})\b", flags=re.IGNORECASE
    )
    locks = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+)?(?:UPDATE|SHARE)\b", flags=re.IGNORECASE)
    first_table = re.compile(r"\bFROM\s+__SCHEMA__\.(\w+)", flags=re.IGNORECASE)

    found: list[Violation] = []
    for name, body in sorted(functions.items()):
        for statement in _statements(body):
            code = _code(statement)
            if re.search(r"\bWITH\b", code, re.I) and _DML_IN_CTE.search(code):
                found.append(Violation("no DML in a CTE", name, statement))
            insert = re.search(r"\bINSERT\s+INTO\b.*?\bVALUES\b(.*)", code, re.I | re.S)
            if insert and re.search(r"\(\s*SELECT\b", insert.group(1), re.I):
                found.append(Violation("subquery in an INSERT", name, statement))
            if touches_table.search(code) and calls_reader.search(code):
                found.append(Violation("table-reading helper in a statement", name, statement))
            locked = first_table.search(code) if locks.search(code) else None
            targets = modifies_keyed.search(code) or (
                locked is not None and locked.group(1) in INSTANCE_KEYED
            )
            if (
                targets
                and "instance_id" not in code.split("WHERE", 1)[-1]
                and (EXCEPTION_MARK not in statement)
            ):
                found.append(Violation("not by instance", name, statement))
    return found


def main() -> int:
    violations = check(head_sql())
    for violation in violations:
        print(violation)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
