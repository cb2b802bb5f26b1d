"""migrations/env.py builds a run and calls it: no state of its own at module
level, and no private attribute of Alembic's anywhere in the run (the runner,
provider/deploy/runner.py, reaches Alembic through its public API only).
Text only: the files are parsed, nothing is imported."""

from __future__ import annotations

import ast
import re

from tests.support.paths import REPO

ENV = REPO / "migrations" / "env.py"
RUN_MODULES = [ENV, *sorted((REPO / "provider" / "deploy").glob("*.py"))]
ALEMBIC_NAMES = {"context", "op", "migration_context", "environment", "step"}


def test_env_py_keeps_no_module_level_state() -> None:
    tree = ast.parse(ENV.read_text())
    assigned = [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Global)
    ]
    assert assigned == []
    assert len(ENV.read_text().splitlines()) <= 40


def test_the_run_uses_no_private_alembic_attribute() -> None:
    """Neither `context._proxy` nor `MigrationContext._migrations_fn`, nor a
    private keyword such as begin_transaction(_per_migration=True)."""
    private = re.compile(r"\b(?:_migrations_fn|_per_migration|_proxy|_transaction_per_migration)\b")
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in RUN_MODULES
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if private.search(line)
    ]
    assert found == []
    for path in RUN_MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ALEMBIC_NAMES
                and node.attr.startswith("_")
            ):
                raise AssertionError(f"{path.name}: {node.value.id}.{node.attr}")
