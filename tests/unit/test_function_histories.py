"""Every function's history is one folder (issue 55): `ls
sql/functions/<name>/` shows every version of any function in sql/head/,
and which version a revision runs is read from there alone
(provider/deploy/function_history.py). The multi-function files of
0001-0007 were split into these folders in the same statement order: the
released digests (tests/deploy/test_released_revisions.py) prove nothing
that runs changed."""

from __future__ import annotations

import re

from devkit.schema.head_schema import head_files
from provider.deploy import function_history
from provider.deploy.sql_files import FUNCTIONS, is_downgrade_file, read_sql, released_files

DEFINES = re.compile(r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\(", re.M)


def head_functions() -> set[str]:
    return {name for path in head_files() for name in DEFINES.findall(path.read_text())}


def test_every_function_of_head_has_its_whole_history_in_one_folder() -> None:
    functions = head_functions()
    assert len(functions) > 100
    for name in sorted(functions):
        versions = function_history.versions(name)
        assert versions, f"sql/functions/{name}/ holds no version"
        newest = function_history.version_at(name, "9999")
        assert newest is not None, f"{name}: its history ends in a drop, but head defines it"


def test_no_released_file_outside_a_functions_folder_defines_a_function() -> None:
    """A revision's own folder holds its tables, indexes and steps; a
    downgrade's file may put an older version back."""
    outside = [
        (path, DEFINES.findall(read_sql(path)))
        for _, path in released_files()
        if not path.startswith(f"{FUNCTIONS}/") and not is_downgrade_file(path)
    ]
    assert [(path, names) for path, names in outside if names] == []


def test_each_version_defines_its_own_function_and_no_other() -> None:
    for name in function_history.names():
        for version in function_history.versions(name):
            if version.dropped:
                continue
            assert DEFINES.findall(read_sql(version.path)) == [name], version.path


def test_which_version_a_revision_runs_is_read_from_the_folder() -> None:
    clock = function_history.version_at("taskhub_clock_ms", "0006")
    assert clock is not None and clock.path == "functions/taskhub_clock_ms/0001.sql"
    dropped = function_history.version_at("taskhub_rebuild_runtime_ddl_guard", "0029")
    assert dropped is None
    kept = function_history.version_at("taskhub_rebuild_runtime_ddl_guard", "0028")
    assert kept is not None and kept.revision == "0024"
    tombstone = function_history.folder("taskhub_rebuild_runtime_ddl_guard") / "0029.dropped"
    assert tombstone.is_file()
