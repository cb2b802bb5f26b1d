"""A released revision never changes: databases that applied it must be able
to trust that replaying it gives the same schema. What is pinned is what the
revision runs (devkit/schema/revision_digest.py): the statements of its
upgrade and downgrade and the tables they lock, however the Python that
renders them is arranged. Which revisions are released, and in which version,
is migrations/released.json (devkit/schema/releases.py), which
`python -m devkit.schema.release VERSION` writes; at most one revision, the
newest, is open, and is amended until a release pins it."""

from __future__ import annotations

import re

import pytest

from devkit.schema import revision_digest
from devkit.schema.releases import REPO, Releases, open_revisions, revision_names
from provider.deploy import migration_steps, sql_files

RELEASES = Releases.read()
RELEASED = RELEASES.digests


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_revision_is_unchanged(name: str) -> None:
    assert revision_digest.revision_digest(name[:4]) == RELEASED[name], (
        f"revision {name} was released and must not change; ship a new revision instead"
    )


def test_the_digest_changes_when_a_statement_a_revision_runs_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step that renders one statement more is a changed release, though
    no revision file or SQL file changed."""
    render = sql_files.render_text
    monkeypatch.setattr(
        migration_steps, "render_text", lambda text, schema: render(text, schema) + "\nSELECT 1"
    )
    assert revision_digest.revision_digest("0018") != RELEASED["0018_lean_acks"]


def test_at_most_the_newest_revision_is_open() -> None:
    opened = open_revisions(RELEASES)
    assert len(opened) <= 1 and opened == revision_names()[len(revision_names()) - len(opened) :]
    shipped = max(RELEASES.versions.values())
    assert all(name[:4] > shipped for name in opened)
    assert all(name in RELEASED for name in revision_names() if name[:4] <= shipped)


def test_the_package_version_is_the_latest_release_and_the_changelog_tells_each() -> None:
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'\nversion = "{RELEASES.latest_version}"\n' in pyproject
    changelog = (REPO / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (\S+)", changelog, re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert [h for h in headings[1:] if h in RELEASES.versions] == list(reversed(RELEASES.versions))
