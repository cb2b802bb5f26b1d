"""One revision skeleton, migrations/script.py.mako: the same few lines for
every revision, naming its data folder (sql/revisions/NNNN_name/revision.toml,
provider/deploy/revision_data.py). `make revision`
(devkit/schema/revision_maker.py) writes it with the data; `alembic
revision` writes it alone, and Alembic then says in one line that the data
is missing. Either way it passes `make lint` as written."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from devkit.schema import revision_maker
from provider.deploy import revision_data
from provider.resources import migrations_dir
from tests.support.paths import REPO


@pytest.fixture
def scripts(tmp_path: Path) -> ScriptDirectory:
    """Our migrations, copied, so that a new revision is written beside them."""
    copy = tmp_path / "migrations"
    copy.mkdir()
    (copy / "versions").mkdir()
    for name in ("env.py", "script.py.mako"):
        (copy / name).write_text((migrations_dir() / name).read_text())
    for module in (migrations_dir() / "versions").glob("[0-9]*.py"):
        (copy / "versions" / module.name).write_text(module.read_text())
    config = Config()
    config.set_main_option("script_location", str(copy))
    return ScriptDirectory.from_config(config)


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


def test_every_revision_module_is_the_skeleton_and_lists_nothing() -> None:
    """No list of files, functions or versions in a module of the migration
    path: each revision's module names its data folder, and nothing else."""
    modules = sorted((migrations_dir() / "versions").glob("[0-9]*.py"))
    assert len(modules) == len(revision_data.revision_folders())
    for module in modules:
        tree = ast.parse(module.read_text())
        literals = [
            node for node in ast.walk(tree) if isinstance(node, ast.List | ast.Dict | ast.Set)
        ]
        assert literals == [], module.name
        assert "load_for(__file__)" in module.read_text(), module.name
        assert revision_data.data_path(module.stem).is_file(), module.name


def test_alembic_revision_writes_a_lint_clean_module_that_asks_for_its_data(
    scripts: ScriptDirectory,
) -> None:
    """Alembic loads the module it wrote at once: without its data, it says
    so in one line (and the module is there, lint-clean, for make revision's
    data to follow)."""
    head = scripts.get_current_head()
    number = f"{int(head or 0) + 1:04d}"
    with pytest.raises(revision_data.RevisionDataError, match="does not exist"):
        scripts.generate_revision(number, "Next step.", head=head)
    (path,) = Path(scripts.versions).glob(f"{number}_*.py")
    assert lint(path) == ""


def test_make_revisions_data_ships_what_the_histories_name() -> None:
    """The data `make revision` writes: the function versions its number
    names, shipped and taken back by the runner from the histories."""
    text = revision_maker.DATA_TEMPLATE.format(number="0099", down="0098", title="Next step.")

    data = tomllib.loads(text)
    assert data["id"] == "0099" and data["down"] == "0098"
    assert {"ship_functions": True} in data["upgrade"]
    assert data["downgrade"] == [{"unship_functions": True}]
    assert data["locks_on_upgrade"] == data["locks_on_downgrade"] == []


def test_a_step_the_runner_does_not_know_is_refused_in_one_line() -> None:
    with pytest.raises(revision_data.RevisionDataError, match="no step 'apply_everything'"):
        revision_data.run_steps("0099", [{"apply_everything": True}], upgrade=True)
    with pytest.raises(revision_data.RevisionDataError, match="one kind a step"):
        revision_data.run_steps("0099", [{"apply": [], "drop_functions": []}], upgrade=True)
