"""A release: `python -m devkit.schema.release 0.3.0`.

1. keeps each new function version as a patch (devkit/schema/sql_history.py);
2. pins the digest of every open revision (migrations/released.json): from
   then on what it runs never changes;
3. names the version that ships them, in released.json and pyproject.toml;
4. turns CHANGELOG.md's "Unreleased" section into that version's, dated.

Run it on a clean tree after `make test`, then commit what it changed."""

from __future__ import annotations

import datetime
import re
import sys

from devkit.schema import sql_history
from devkit.schema.releases import REPO, Releases, open_revisions
from devkit.schema.revision_digest import revision_digest

PYPROJECT = REPO / "pyproject.toml"
CHANGELOG = REPO / "CHANGELOG.md"
UNRELEASED = "## Unreleased"
VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def release(version: str, today: datetime.date) -> list[str]:
    """Release the open revisions as `version`; what it did, line by line."""
    releases = Releases.read()
    if not VERSION.match(version) or version in releases.versions:
        raise SystemExit(f"release: {version!r} is not a new version (MAJOR.MINOR.PATCH)")
    opened = open_revisions(releases)
    if not opened:
        raise SystemExit("release: no open revision to release")
    changelog = CHANGELOG.read_text(encoding="utf-8")
    if UNRELEASED not in changelog:
        raise SystemExit(f"release: CHANGELOG.md has no {UNRELEASED!r} section to release")
    done = [f"patch {path.name} of {path.parent.name}" for path in sql_history.compact_all()]
    for name in opened:
        releases.digests[name] = revision_digest(name[:4])
        done.append(f"pinned {name}")
    releases.versions[version] = opened[-1][:4]
    releases.write()
    pyproject = PYPROJECT.read_text(encoding="utf-8")
    PYPROJECT.write_text(
        re.sub(r'^version = "[^"]+"$', f'version = "{version}"', pyproject, count=1, flags=re.M),
        encoding="utf-8",
    )
    CHANGELOG.write_text(
        changelog.replace(UNRELEASED, f"{UNRELEASED}\n\n## {version} ({today.isoformat()})", 1),
        encoding="utf-8",
    )
    done.append(f"version {version}: pyproject.toml, CHANGELOG.md, migrations/released.json")
    return done


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m devkit.schema.release VERSION")
    for line in release(sys.argv[1], datetime.date.today()):
        print(line)
