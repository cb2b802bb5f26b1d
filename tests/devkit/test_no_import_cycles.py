"""No module of the repository imports, directly or through others, a module
that imports it back: not at the top of a file, and not inside a function
either (an import inside a function that only breaks a circle hides it).
Text only: the files are parsed, nothing is imported."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import REPO

PACKAGES = ("provider", "bench", "devkit", "drills", "scripts", "migrations", "tests")


def module_files() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imported(tree: ast.AST, modules: dict[str, Path]) -> Iterator[str]:
    """The repository's modules a file imports, wherever the import stands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in modules:
                    yield submodule
                elif node.module in modules:
                    yield node.module


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {
        name: set(imported(ast.parse(path.read_text()), modules)) - {name}
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    order: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = lowest[module] = len(order)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in order:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in stack:
                lowest[module] = min(lowest[module], order[target])
        if lowest[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def test_a_circle_is_found_even_through_an_import_inside_a_function() -> None:
    graph = {"bench.run": {"bench.wakeups"}, "bench.wakeups": {"bench.run"}, "bench.leaf": set()}
    assert cycles(graph) == [["bench.run", "bench.wakeups"]]
    tree = ast.parse("def main():\n    from bench.run import database_url\n")
    assert list(imported(tree, {"bench.run": Path("run.py")})) == ["bench.run"]


def test_nothing_imports_an_entry_point_of_scripts() -> None:
    """scripts/ holds command lines only: what they share lives in devkit/."""
    importers = {
        name: sorted(target for target in targets if target.split(".")[0] == "scripts")
        for name, targets in import_graph().items()
    }
    assert {name: found for name, found in importers.items() if found} == {}
