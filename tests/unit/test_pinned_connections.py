"""Every connection the command line, the operations and the deploy steps
open pins search_path in its startup parameters, before its first statement
(provider/deploy/privileged_session.py `connect`): a database setting can
put a lesser role's schema first on the path, and whatever a session sends
before it pins the path could resolve a name to that role's function,
operator or cast. A rule on the text, so a new connection cannot skip it
unseen: the connection in the command line's `check` that explained an
unmigrated schema did, and ran the owner's operators as a superuser."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO

RULED = ("cli", "operations", "deploy")
# The one place that opens them, and the pooling check's second connection,
# which sends one qualified statement (session_pinning.SERVER_PID).
ALLOWED = {"provider/deploy/privileged_session.py", "provider/deploy/session_pinning.py"}
OPENERS = {"psycopg.connect", "psycopg.Connection.connect", "psycopg.AsyncConnection.connect"}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def unpinned_connections() -> list[str]:
    found = []
    for layer in RULED:
        for path in sorted((REPO / "provider" / layer).rglob("*.py")):
            relative = str(path.relative_to(REPO))
            if relative in ALLOWED:
                continue
            for node in ast.walk(ast.parse(path.read_text(), relative)):
                if isinstance(node, ast.Call):
                    name = _dotted(node.func)
                    if name in OPENERS or name.endswith("ConnectionPool"):
                        found.append(f"{relative}:{node.lineno} {name}")
    return found


def test_the_command_line_operations_and_deploy_steps_open_only_pinned_connections() -> None:
    assert unpinned_connections() == []


def test_the_rule_sees_a_plain_connection(tmp_path: Path) -> None:
    tree = ast.parse("import psycopg\nwith psycopg.connect(url) as conn: pass\n")
    calls = [_dotted(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert "psycopg.connect" in calls
