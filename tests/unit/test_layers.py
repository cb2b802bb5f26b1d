"""The provider's layers (docs/architecture.md) as rules a change cannot
break unseen: which layer may import which, and that only `client/`,
`deploy/` and `operations/` issue SQL. Text only: the files are parsed,
nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import REPO

PROVIDER = REPO / "provider"
LAYERS = ("client", "worker", "deploy", "operations", "cli", "metrics", "testing", "dashboard")
# What each layer may not import. Leaves (shapes, types, errors, config,
# logs, schema_name, masking, ...) are open to all; `provider/__init__.py` is the facade.
FORBIDDEN = {
    # The worker knows the hub through worker/calls.py's protocols only.
    "worker": {"client", "deploy", "cli", "metrics", "testing"},
    # The runtime's operations: nothing of the operator's side.
    "client": {"worker", "deploy", "cli", "metrics", "testing"},
    # Deploying a hub: nothing of how it is operated.
    "deploy": {"client", "worker", "operations", "cli", "metrics", "testing", "dashboard"},
    # Operating a hub: its runbook, status, drift check and placement, on top of deploy/.
    "operations": {"client", "worker", "cli", "metrics", "testing", "dashboard"},
    "metrics": {"cli", "testing", "dashboard"},
    # The web pages: what the runbook and TaskHub read, nothing of the CLI's.
    "dashboard": {"worker", "cli", "metrics", "testing"},
    "cli": {"testing"},
    "testing": {"cli", "dashboard"},
}
LEAVES = (
    "inert_text",
    "shapes",
    "types",
    "errors",
    "config",
    "logs",
    "schema_name",
    "tracing",
    "citus_placement",
    "masking",
    "backoff",
    "moments",
    "resources",
    "standing",
    "hub_rows",
    "host_headers",
)
# Calls that send SQL to a server. Opening a connection to hand to a reader
# of `deploy/` (the CLI, the metrics, the test kit) is not one.
SQL_CALLS = {"execute", "executemany", "copy", "cursor"}
SQL_LAYERS = {"client", "deploy", "operations"}


def layer_of(path: Path) -> str | None:
    parts = path.relative_to(PROVIDER).parts
    return parts[0] if len(parts) > 1 else None


def provider_files() -> list[Path]:
    return sorted(PROVIDER.rglob("*.py"))


def imported_layers(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            parts = name.split(".")
            if parts[0] == "provider" and len(parts) > 1:
                found.add(parts[1])
    return found


def sql_calls(tree: ast.AST) -> list[str]:
    """`x.execute(...)`, `conn.cursor()` and the like,
    and every use of psycopg's `sql` composition (`sql.SQL`, `sql.Identifier`)."""
    found = []
    for node in ast.walk(tree):
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and call.attr in SQL_CALLS:
            found.append(f"line {call.lineno}: .{call.attr}(")
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "psycopg"
            and any(alias.name == "sql" for alias in node.names)
        ):
            found.append(f"line {node.lineno}: from psycopg import sql")
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_imports_no_layer_above_it(layer: str) -> None:
    wrong = {}
    for path in provider_files():
        if layer_of(path) == layer:
            reached = imported_layers(ast.parse(path.read_text())) & FORBIDDEN[layer]
            if reached:
                wrong[str(path.relative_to(REPO))] = sorted(reached)
    assert wrong == {}


def test_the_leaves_import_no_layer() -> None:
    wrong = {}
    for leaf in LEAVES:
        path = PROVIDER / f"{leaf}.py"
        reached = imported_layers(ast.parse(path.read_text())) & set(LAYERS)
        if reached:
            wrong[leaf] = sorted(reached)
    assert wrong == {}


def test_only_the_client_and_the_deploy_layer_issue_sql() -> None:
    wrong = {}
    for path in provider_files():
        if layer_of(path) in SQL_LAYERS:
            continue
        calls = sql_calls(ast.parse(path.read_text()))
        if calls:
            wrong[str(path.relative_to(REPO))] = calls
    assert wrong == {}


def test_the_sql_rule_sees_a_query() -> None:
    """The rule above would pass on anything if sql_calls found nothing."""
    tree = ast.parse("from psycopg import sql\nconn.execute(sql.SQL('SELECT 1'))\nconn.cursor()")
    assert sql_calls(tree) == [
        "line 1: from psycopg import sql",
        "line 2: .execute(",
        "line 3: .cursor(",
    ]
