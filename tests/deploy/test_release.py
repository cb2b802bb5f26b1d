"""A release (`python -m devkit.schema.release VERSION`), in a copy of the
tree: it pins the open revision with the digest of what it runs, names the
version in migrations/released.json and pyproject.toml, and dates the
changelog's Unreleased section; with nothing open it refuses and changes
nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from devkit.schema.releases import Releases, open_revisions, revision_names
from devkit.schema.revision_digest import revision_digest
from tests.support.paths import REPO

TREE = ("provider", "devkit", "migrations", "sql")


def copy_of_the_tree(into: Path) -> Path:
    for part in TREE:
        shutil.copytree(REPO / part, into / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "CHANGELOG.md"):
        shutil.copy(REPO / name, into / name)
    return into


def release(tree: Path, version: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devkit.schema.release", version],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def all_pinned() -> Releases:
    """The releases as they are, with each revision still open (being worked
    on: "How a revision is made") pinned at what it runs now."""
    now = Releases.read()
    pinned = {name: revision_digest(name[:4]) for name in open_revisions(now)}
    return Releases(dict(now.versions), {**now.digests, **pinned})


def test_a_release_pins_the_open_revision_and_names_its_version(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    newest = revision_names()[-1]
    before = all_pinned()
    opened = Releases(
        {v: r for v, r in before.versions.items() if r < newest[:4]} or {"0.0.1": "0000"},
        {name: d for name, d in before.digests.items() if name != newest},
    )
    opened.write(tree / "migrations" / "released.json")

    done = release(tree, "9.9.9")

    assert done.returncode == 0, done.stderr
    after = json.loads((tree / "migrations" / "released.json").read_text())
    assert after["digests"][newest] == before.digests[newest]  # what it runs, unchanged
    assert list(after["versions"].items())[-1] == ("9.9.9", newest[:4])
    assert '\nversion = "9.9.9"\n' in (tree / "pyproject.toml").read_text()
    changelog = (tree / "CHANGELOG.md").read_text()
    assert "## Unreleased\n\n## 9.9.9 (" in changelog


def test_with_nothing_open_a_release_refuses_and_changes_nothing(tmp_path: Path) -> None:
    tree = copy_of_the_tree(tmp_path)
    all_pinned().write(tree / "migrations" / "released.json")
    released = (tree / "migrations" / "released.json").read_text()
    done = release(tree, "9.9.9")
    assert done.returncode == 1 and "no open revision" in done.stderr
    assert (tree / "migrations" / "released.json").read_text() == released
    assert (tree / "pyproject.toml").read_text() == (REPO / "pyproject.toml").read_text()
