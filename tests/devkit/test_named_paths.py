"""Every file the docs and the code's prose point at exists
(devkit/named_paths.py): a rename that leaves a pointer behind fails here,
with the file and line of each pointer it left."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devkit.named_paths import Checker, stale_pointers
from tests.support.paths import REPO


def test_every_path_the_docs_and_comments_name_exists() -> None:
    stale = stale_pointers(REPO)
    assert not stale, "stale pointers:\n" + "\n".join(map(str, stale))


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A small checkout: a module, a versioned function, a site page, outputs."""
    (tmp_path / "provider" / "deploy").mkdir(parents=True)
    (tmp_path / "provider" / "deploy" / "runner.py").write_text("")
    (tmp_path / "sql" / "functions" / "ack_worker").mkdir(parents=True)
    (tmp_path / "sql" / "functions" / "ack_worker" / "0008.patch").write_text("")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "grid.py").write_text("")
    (tmp_path / ".gitignore").write_text(".venv/\nbench/results/\n")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "mkdocs.yml").write_text("nav:\n  - Command line: reference/cli.md\n")
    return tmp_path


def test_a_planted_stale_pointer_is_named_with_its_line(checkout: Path) -> None:
    checker = Checker(checkout)
    doc = "See `provider/deploy/runner.py`.\nThen `provider/deploy/gone.py`, `-m bench.old`.\n"
    found = list(checker.in_doc("docs/x.md", doc))
    assert [(p.line, p.kind, p.name) for p in found] == [
        (2, "path", "provider/deploy/gone.py"),
        (2, "module", "bench.old"),
    ]
    assert str(found[0]) == "docs/x.md:2: path provider/deploy/gone.py does not exist"


def test_comments_and_docstrings_are_read_not_code(checkout: Path) -> None:
    module = (
        '"""Runs beside runner.py and fenced.py."""\n'
        'PATH = "provider/deploy/missing_but_code.py"\n'
        "# the gate's file: call_gate/taskhub_wait_at_call_gate.sql\n"
    )
    found = list(Checker(checkout).in_code("provider/deploy/x.py", module))
    assert [(p.line, p.name) for p in found] == [
        (3, "call_gate/taskhub_wait_at_call_gate.sql"),
        (1, "fenced.py"),
    ]


def test_patterns_outputs_patches_site_pages_and_wheel_names_are_not_pointers(
    checkout: Path,
) -> None:
    prose = (
        "# sql/functions/<name>/NNNN.sql, sql/guard/*.sql, sql/0019_.../,\n"
        "# bench/results/grid.json, sql/functions/ack_worker/0008.sql,\n"
        "# reference/cli.md, ../shared/contract.md, provider/_sql, psycopg.sql,\n"
        "# python -m bench.archive.<name>, python -m bench.grid.\n"
    )
    assert list(Checker(checkout).in_code("provider/deploy/x.py", prose)) == []
