"""Released function files are kept as their history (sql/functions/<name>/):
each later version is a patch against the one before wherever that is
smaller, so no released copy repeats its predecessor; the reader applies the
patches and refuses one that does not fit. (That every revision still runs
the same statements is tests/deploy/test_released_revisions.py.)"""

from __future__ import annotations

import itertools

import pytest

from devkit.schema.sql_history import PATCH_AT_MOST, patch_between
from provider.deploy.sql_files import (
    FUNCTIONS,
    apply_patch,
    function_versions,
    read_sql,
    released_files,
    shipped_name,
)
from provider.resources import sql_dir

BEFORE = "CREATE FUNCTION f() RETURNS int\nLANGUAGE sql\nAS $$ SELECT 1 $$;\n"
AFTER = "CREATE FUNCTION f() RETURNS int\nLANGUAGE sql\nAS $$ SELECT 2 $$;\n-- two\n"


def test_a_patch_gives_back_the_version_it_was_made_from() -> None:
    patch = patch_between(BEFORE, AFTER, "0001.sql", "0002.sql")
    assert apply_patch(BEFORE, patch) == AFTER


def test_a_patch_that_does_not_fit_is_refused() -> None:
    patch = patch_between(BEFORE, AFTER, "0001.sql", "0002.sql")
    with pytest.raises(ValueError, match="does not fit"):
        apply_patch(BEFORE.replace("SELECT 1", "SELECT 3"), patch)


def test_no_released_version_repeats_the_one_before_whole() -> None:
    """Each version after the first is a patch, unless the patch would be
    longer than the version itself."""
    repeated = []
    for folder in sorted((sql_dir() / FUNCTIONS).iterdir()):
        versions = function_versions(folder.name)
        for before, after in itertools.pairwise(versions):
            if not (folder / f"{after}.sql").is_file():
                continue
            old, new = (read_sql(f"{FUNCTIONS}/{folder.name}/{n}.sql") for n in (before, after))
            # Named as compact names them: the headers count in its length.
            patch = patch_between(old, new, f"{before}.sql", f"{after}.sql")
            if len(patch) <= PATCH_AT_MOST * len(new):
                repeated.append(f"{folder.name}/{after}")
    assert repeated == []


def test_every_released_file_reads_and_keeps_the_name_it_shipped_under() -> None:
    files = released_files()
    assert len(files) > 250
    for number, path in files:
        assert read_sql(path).strip(), path
        if path.startswith(FUNCTIONS):
            assert shipped_name(path) == f"{path.split('/')[1]}.sql" and path.endswith(
                f"{number}.sql"
            )
    assert released_files(up_to="0005") == [file for file in files if file[0] <= "0005"]
