"""The README is a front page: at most 160 lines, install, deploy and the
way to the runtime-plus-worker program on its first screen, and its Python
example type-checks under mypy --strict against the package. No database."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

README = (REPO / "README.md").read_text()
FIRST_SCREEN = "\n".join(README.splitlines()[:40])


def test_the_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) <= 160


def test_the_first_screen_has_install_deploy_and_the_runtime_with_a_worker() -> None:
    assert "pip install" in FIRST_SCREEN
    assert "taskhub-pg upgrade" in FIRST_SCREEN and "alembic" in FIRST_SCREEN
    assert "(docs/getting-started.md)" in FIRST_SCREEN


def test_every_page_it_links_to_is_there() -> None:
    links = re.findall(r"\]\(((?:docs/)?[\w./-]+)\)", README)
    assert links
    assert [link for link in links if not (REPO / link).is_file()] == []


def test_its_commands_are_the_getting_started_pages_which_the_suite_runs() -> None:
    """The deploy commands also run from the built wheel (tests/deploy/test_wheel.py)."""
    page = (REPO / "docs" / "getting-started.md").read_text()
    for block in re.findall(r"```sh\n(.*?)```", README, re.S)[:2]:
        for line in block.splitlines():
            command = line.split("#", 1)[0].strip()
            if command.startswith(("pip install", "taskhub-pg")):
                assert command in page, command


@pytest.mark.slow
def test_the_worker_example_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    found = re.search(r"<!-- readme-worker-example.*?-->\n```python\n(.*?)```", README, re.S)
    assert found is not None
    example = tmp_path / "readme_worker.py"
    example.write_text(found.group(1))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(example)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:]
