"""Keeping released function files as their history: one folder a function
(sql/functions/<name>/), each later version a patch against the one before
when that is smaller than its whole text (provider/deploy/sql_files.py reads
them back).

    python -m devkit.schema.sql_history compact   # at a release: patches for new versions

`compact` checks every patch it writes: applied to the version before, it
gives back the version byte for byte, or the whole text is kept."""

from __future__ import annotations

import difflib
import itertools
import sys
from pathlib import Path

from provider.deploy.sql_files import FUNCTIONS, apply_patch, function_versions, read_sql
from provider.resources import sql_dir

# A version is kept as a patch when that is smaller than its whole text: what
# it repeats of the version before is then only the context of each change.
PATCH_AT_MOST = 1.0


def patch_between(before: str, after: str, before_name: str, after_name: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=before_name,
            tofile=after_name,
            n=3,
        )
    )


def compact(name: str) -> list[Path]:
    """Turn each whole-text version of function file `name` after the first
    into a patch where that is smaller; the patches written."""
    folder = sql_dir() / FUNCTIONS / name
    versions = function_versions(name)
    texts = {number: read_sql(f"{FUNCTIONS}/{name}/{number}.sql") for number in versions}
    written = []
    for before, after in itertools.pairwise(versions):
        whole = folder / f"{after}.sql"
        if not whole.is_file() or not texts[after].endswith("\n"):
            continue
        patch = patch_between(texts[before], texts[after], f"{before}.sql", f"{after}.sql")
        if len(patch) > PATCH_AT_MOST * len(texts[after]):
            continue
        if apply_patch(texts[before], patch) != texts[after]:
            continue  # difflib's text that our reader would not read back: keep it whole
        (folder / f"{after}.patch").write_text(patch, encoding="utf-8")
        whole.unlink()
        written.append(folder / f"{after}.patch")
    return written


def compact_all() -> list[Path]:
    root = sql_dir() / FUNCTIONS
    return [patch for folder in sorted(root.iterdir()) for patch in compact(folder.name)]


if __name__ == "__main__":
    if sys.argv[1:] != ["compact"]:
        raise SystemExit("usage: python -m devkit.schema.sql_history compact")
    for path in compact_all():
        print(f"wrote {path.relative_to(sql_dir().parent)}")
