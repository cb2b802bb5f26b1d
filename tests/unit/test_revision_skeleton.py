"""One revision skeleton, migrations/script.py.mako: `alembic revision`
writes it for a revision made by hand, and `make revision`
(devkit/schema/revision_maker.py) writes it with the files that changed in
sql/head/. Either way it passes `make lint` as written and declares what
every revision must (its locks, files and downgrade)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from provider.resources import migrations_dir
from tests.support.paths import REPO


@pytest.fixture
def scripts(tmp_path: Path) -> ScriptDirectory:
    """Our migrations, copied, so that a new revision is written beside them."""
    copy = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    config = Config()
    config.set_main_option("script_location", str(copy))
    return ScriptDirectory.from_config(config)


def new_revision(
    scripts: ScriptDirectory,
    *,
    files: list[str] | None = None,
    replaced: dict[str, list[str]] | None = None,
    added: list[str] | None = None,
) -> Path:
    """A new revision as `make revision` writes it (files, replaced, added)
    or, with none of them, as `alembic revision` does."""
    head = scripts.get_current_head()
    number = f"{int(head or 0) + 1:04d}"
    if files is None and replaced is None and added is None:
        written = scripts.generate_revision(number, "Next step.", head=head)
    else:
        written = scripts.generate_revision(
            number,
            "Next step.",
            head=head,
            files=files or [],
            replaced=replaced or {},
            added=added or [],
        )
    assert written is not None
    return Path(written.path)


def lint(path: Path) -> str:
    ruff = [sys.executable, "-m", "ruff"]
    config = ["--config", str(REPO / "pyproject.toml")]
    checked = subprocess.run([*ruff, "check", *config, str(path)], capture_output=True, text=True)
    formatted = subprocess.run(
        [*ruff, "format", "--check", *config, str(path)], capture_output=True, text=True
    )
    return (checked.stdout if checked.returncode else "") + (
        formatted.stdout if formatted.returncode else ""
    )


def assigned(path: Path) -> dict[str, object]:
    tree = ast.parse(path.read_text())
    values: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            values[node.target.id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def test_alembic_revision_writes_a_lint_clean_revision_to_fill_in(
    scripts: ScriptDirectory,
) -> None:
    head = scripts.get_current_head()
    path = new_revision(scripts)
    assert lint(path) == ""
    values = assigned(path)
    assert values["revision"] == f"{int(head or 0) + 1:04d}"
    assert values["down_revision"] == head
    for declared in ("LOCKS_ON_UPGRADE", "LOCKS_ON_DOWNGRADE", "FILES", "NEW_FUNCTIONS"):
        assert values[declared] == []
    assert values["REPLACED"] == {}
    assert "from provider.deploy.migration_steps import" in path.read_text()


def test_make_revision_fills_the_same_skeleton_with_what_changed(
    scripts: ScriptDirectory,
) -> None:
    files = ["0019_next_step/ack_worker.sql", "0019_next_step/taskhub_new_helper.sql"]
    replaced = {"functions/ack_worker/0018.sql": ["ack_worker"]}
    path = new_revision(scripts, files=files, replaced=replaced, added=["taskhub_new_helper"])
    assert lint(path) == ""
    values = assigned(path)
    assert values["FILES"] == files
    assert values["REPLACED"] == replaced
    assert values["NEW_FUNCTIONS"] == ["taskhub_new_helper"]


def test_the_new_revision_is_the_head_alembic_sees(scripts: ScriptDirectory) -> None:
    before = scripts.get_current_head()
    path = new_revision(scripts)
    config = Config()
    config.set_main_option("script_location", str(path.parent.parent))
    reread = ScriptDirectory.from_config(config)
    head = reread.get_current_head()
    assert head is not None and head != before
    revision = reread.get_revision(head)
    assert revision is not None and revision.down_revision == before
