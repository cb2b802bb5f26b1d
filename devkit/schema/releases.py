"""Which revisions are released, and in which version of the package
(migrations/released.json, written by `python -m devkit.schema.release`).

A revision is released once its digest is pinned (what it runs, from
devkit/schema/revision_digest.py): from then on databases that applied it
trust that it never changes. At most one revision is open, the newest:
while it is, a working step amends it (its files are edited in place, or
`make revision` rewrites its function versions from sql/head/), so a step
costs no frozen copy. A release pins every open revision and names the
package version that ships it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RELEASED_FILE = REPO / "migrations" / "released.json"
VERSIONS_DIR = REPO / "migrations" / "versions"


@dataclass(frozen=True)
class Releases:
    # package version -> the newest revision it ships, oldest version first
    versions: dict[str, str]
    # "NNNN_name" of each released revision -> the digest of what it runs
    digests: dict[str, str]

    @classmethod
    def read(cls, path: Path = RELEASED_FILE) -> Releases:
        found = json.loads(path.read_text(encoding="utf-8"))
        return cls(dict(found["versions"]), dict(found["digests"]))

    def write(self, path: Path = RELEASED_FILE) -> None:
        data = {"versions": self.versions, "digests": dict(sorted(self.digests.items()))}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    @property
    def latest_version(self) -> str:
        return list(self.versions)[-1]

    def is_released(self, revision: str) -> bool:
        return any(name[:4] == revision for name in self.digests)


def revision_names() -> list[str]:
    """Every revision, "NNNN_name", oldest first."""
    return sorted(path.stem for path in VERSIONS_DIR.glob("[0-9][0-9][0-9][0-9]_*.py"))


def open_revisions(releases: Releases | None = None) -> list[str]:
    """The revisions not released yet ("NNNN_name")."""
    known = releases or Releases.read()
    return [name for name in revision_names() if name not in known.digests]
