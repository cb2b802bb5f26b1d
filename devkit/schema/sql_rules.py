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
5. `one table a statement`: in the hot path (the functions that plan with
   force_generic_plan), a statement that reads or writes a table of the hub
   names one table, with no join, no subquery, no INSERT ... SELECT and no
   volatile call (read the clock or draw the id into a variable first: an
   INSERT that leaves a serial id to its default calls nextval). On a
   distributed hub such a statement takes Citus's fast path and is planned on
   its node like a plain one; any other costs a distributed plan, a deparse
   and a new parse and plan of the shard query on every call (revision 0022).
6. `INSERT ... SELECT under a generic plan`: a function the hot path calls
   (a function's SET reaches the functions it calls) that holds an INSERT
   ... SELECT is one taskhub_distribute_on_citus gives force_custom_plan:
   Citus cannot plan an INSERT ... SELECT with parameters as a generic plan
   ("could not create distributed plan").

    python -m devkit.schema.sql_rules         # prints each violation; exit 1 if any
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from provider.resources import sql_dir

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
# A statement of the hot path that only plain PostgreSQL runs (a distributed
# hub takes a one-table branch instead), said so in a comment: rule 5 skips it.
PLAIN_ONLY_MARK = "plain PostgreSQL only:"

_FUNCTION = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\(.*?\bAS \$(\w*)\$(.*?)\$\2\$",
    flags=re.MULTILINE | re.DOTALL,
)
_HEADER = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\((.*?)\bAS \$\w*\$",
    flags=re.MULTILINE | re.DOTALL,
)
# Besides the hot path: what a runtime calls on every turn or while it waits
# for an orchestration, held to rule 5 as well.
ONE_TABLE_FUNCTIONS = frozenset(
    {
        "enqueue_orchestrator_work",
        "enqueue_worker_work",
        "fetch_history",
        "fetch_history_with_execution",
        "get_custom_status",
        "renew_orchestration_item_lock",
        "renew_work_item_lock",
        "abandon_orchestration_item",
        "abandon_work_item",
    }
)
GENERIC_PLAN = re.compile(r"\bSET\s+plan_cache_mode\s*=\s*force_generic_plan\b", re.I)
# The function whose list of helpers gets force_custom_plan on Citus (rule 6).
DISTRIBUTE = "taskhub_distribute_on_citus"
_CUSTOM_PLAN_LIST = re.compile(r"\bp\.proname\s+IN\s*\(([^)]*)\)", re.I)
VOLATILE_CALLS = re.compile(
    r"\b(?:__SCHEMA__\.taskhub_clock_ms|__SCHEMA__\.taskhub_refuse_turn_element|nextval"
    r"|gen_random_uuid|random|clock_timestamp)\s*\(",
    re.I,
)
_SUBQUERY_OR_JOIN = re.compile(r"\(\s*SELECT\b|\bEXISTS\s*\(|\bJOIN\b", re.I)
_CALL = re.compile(r"__SCHEMA__\.(\w+)\(")
_SERIAL_TABLE = re.compile(
    r"^CREATE (?:UNLOGGED )?TABLE __SCHEMA__\.(\w+) \((?:[^;]*?)\bid\s+bigserial\b",
    flags=re.MULTILINE,
)
_INSERT_COLUMNS = re.compile(
    r"\bINSERT\s+INTO\s+__SCHEMA__\.(\w+)\s*(?:AS\s+\w+\s*)?\(([^)]*)\)", re.I
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

    hot = {
        match.group(1)
        for text in files.values()
        for match in _HEADER.finditer(text)
        if GENERIC_PLAN.search(match.group(2))
    }
    serial = {name for text in files.values() for name in _SERIAL_TABLE.findall(text)}
    found: list[Violation] = []
    for name in sorted(hot | (ONE_TABLE_FUNCTIONS & functions.keys())):
        for statement in _statements(functions.get(name, "")):
            code = _code(statement)
            named = set(touches_table.findall(code))
            if (
                named
                and PLAIN_ONLY_MARK not in statement
                and (
                    len(named) > 1
                    or _SUBQUERY_OR_JOIN.search(code)
                    or _insert_select(code)
                    or VOLATILE_CALLS.search(code)
                    or _serial_by_default(code, serial)
                )
            ):
                found.append(Violation("one table a statement", name, statement))
    custom = _custom_plan_helpers(functions.get(DISTRIBUTE, ""))
    for name in sorted(_reached_from(hot, functions) - custom):
        for statement in _statements(functions[name]):
            if _insert_select(_code(statement)):
                found.append(Violation("INSERT ... SELECT under a generic plan", name, statement))
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


def _serial_by_default(code: str, serial: set[str]) -> bool:
    """An INSERT into a table with a serial id that names no id column."""
    insert = _INSERT_COLUMNS.search(code)
    return bool(insert and insert.group(1) in serial and not re.search(r"\bid\b", insert.group(2)))


def _insert_select(code: str) -> bool:
    insert = re.search(r"\bINSERT\s+INTO\b(.*)", code, re.I | re.S)
    return bool(
        insert
        and re.search(r"\bSELECT\b", insert.group(1), re.I)
        and not re.search(r"\bVALUES\b", insert.group(1), re.I)
    )


def _custom_plan_helpers(distribute_body: str) -> set[str]:
    """The names taskhub_distribute_on_citus gives force_custom_plan."""
    return {
        name
        for listed in _CUSTOM_PLAN_LIST.findall(distribute_body)
        for name in re.findall(r"'(\w+)'", listed)
    }


def _reached_from(roots: set[str], functions: dict[str, str]) -> set[str]:
    """The functions the roots call, directly or not (the roots excluded)."""
    reached: set[str] = set()
    todo = list(roots)
    while todo:
        for callee in _CALL.findall(_code(functions.get(todo.pop(), ""))):
            if callee in functions and callee not in reached and callee not in roots:
                reached.add(callee)
                todo.append(callee)
    return reached


def main() -> int:
    violations = check(head_sql())
    for violation in violations:
        print(violation)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
