"""What `make revision NAME=...` does (scripts/new_revision.py is its command
line): start a new revision from what changed in sql/head/, or amend the
open one.

It builds a schema from sql/head/ and one with `alembic upgrade head`, and
compares them function by function. Each function that head changed or
added gets head's text as this revision's version in its history,
sql/functions/<function>/NNNN.sql (as CREATE OR REPLACE, which keeps grants;
`python -m devkit.schema.sql_history compact` keeps it as a patch), and each
function head dropped gets NNNN.dropped. A new revision also gets its data,
sql/revisions/NNNN_NAME/revision.toml (provider/deploy/revision_data.py):
its upgrade ships every function version its number names and its
downgrade puts back the versions before, both read from the histories, so
nothing lists them; and its Alembic module, migrations/versions/NNNN_NAME.py,
the same few lines for every revision (migrations/script.py.mako). What is
left by hand: the locks each direction takes, the summary, and any table,
index or view (its DDL in the revision's folder, named in a step). Nothing
is released until `python -m devkit.schema.release VERSION` pins it
(devkit/schema/releases.py); while the newest revision is open, `make
revision` amends it: its function versions are written again from head.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from alembic.script import ScriptDirectory

from devkit.schema.catalogue import snapshot
from devkit.schema.head_schema import HEAD, apply_head, head_files
from devkit.schema.releases import open_revisions
from devkit.schema.sql_history import compact
from provider.deploy import function_history, migrate, revision_data
from provider.deploy.migration_options import MigrationOptions

REPO = Path(__file__).resolve().parents[2]
VERSIONS = REPO / "migrations" / "versions"
DEFINES = re.compile(r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(\w+)\(", re.M)


def functions_by_name(rows: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Function rows of a catalogue snapshot, keyed on the bare name."""
    return {row[0].split(".", 1)[1].split("(", 1)[0].strip('"'): row for row in rows}


def compare(url: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(changed, added, dropped) functions of head against the migrations,
    and the other kinds of object that differ."""
    suffix = uuid.uuid4().hex[:8]
    built, migrated = f"rev_head_{suffix}", f"rev_migrated_{suffix}"
    migrate.upgrade(url, migrated)
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            apply_head(conn, built)
            head, current = snapshot(conn, built), snapshot(conn, migrated)
        finally:
            for schema in (built, migrated):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    head_fns = functions_by_name(head["functions"])
    current_fns = functions_by_name(current["functions"])
    both = head_fns.keys() & current_fns.keys()
    changed = sorted(name for name in both if head_fns[name] != current_fns[name])
    added = sorted(head_fns.keys() - current_fns.keys())
    dropped = sorted(current_fns.keys() - head_fns.keys())
    others = [kind for kind in current if kind != "functions" and head[kind] != current[kind]]
    return changed, added, dropped, others


def head_file_of(name: str) -> Path:
    for path in head_files():
        if path.stem == name and DEFINES.search(path.read_text()):
            return path
    raise SystemExit(f"no file sql/{HEAD}/*/{name}.sql defines {name}")


def released_file_of(name: str) -> str:
    """The version of `name` the newest revision runs (relative to sql/)."""
    version = function_history.version_at(name, "9999")
    if version is None:
        raise SystemExit(f"no revision ships {name}")
    return version.path


def next_number() -> str:
    return f"{int(revision_data.revision_folders()[-1][:4]) + 1:04d}"


def write_revision(
    name: str, changed: list[str], added: list[str], dropped: list[str]
) -> list[Path]:
    """Revision NNNN_`name`: its function versions, its data and its module."""
    number = next_number()
    written = write_versions(number, changed + added, dropped)
    folder = f"{number}_{name}"
    data = revision_data.data_path(folder)
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text(
        DATA_TEMPLATE.format(number=number, down=f"{int(number) - 1:04d}", title=_title(name)),
        encoding="utf-8",
    )
    # The one skeleton, migrations/script.py.mako, as `alembic revision` writes it.
    config = migrate.alembic_config(MigrationOptions())
    script = ScriptDirectory.from_config(config).generate_revision(
        number, _title(name), head=migrate.head_revision()
    )
    assert script is not None
    module = Path(script.path)
    if module.stem != folder:
        module = module.rename(module.with_name(f"{folder}.py"))
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(module)], check=False)
    return [*written, data, module]


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize() + "."


DATA_TEMPLATE = """# Revision {number}: what it runs, as data (provider/deploy/revision_data.py).
id = "{number}"
down = "{down}"
summary = '''
{title}

(Say what it changes, and why no running runtime notices: no argument list
or result type of a function the runtime calls changes.)
'''
# The tables each direction alters, drops or indexes: a run locks them up
# front, in the hot path's order (provider/deploy/table_locks.py), and refuses
# a strong lock on a table not named here.
locks_on_upgrade = []
locks_on_downgrade = []

# Every function version numbered {number} (sql/functions/*/{number}.*):
# applied, or dropped where the history says so.
[[upgrade]]
ship_functions = true

# Last: like every function of the schema, the new ones are not executable
# by PUBLIC.
[[upgrade]]
apply = ["revisions/0006_hot_path/no_public_execute.sql"]

# Each of them as the revision before ran it, or dropped where it is new.
[[downgrade]]
unship_functions = true
"""


def write_versions(number: str, functions: list[str], dropped: list[str]) -> list[Path]:
    """Head's text of each function as version `number`, and a drop for each
    function head no longer has (one this revision added is simply gone)."""
    written = []
    for function in functions:
        folder = function_history.folder(function)
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(f"{number}.*"):
            stale.unlink()
        version = folder / f"{number}.sql"
        version.write_text(head_version_text(function))
        # As a patch against the version before, where that is smaller (as a
        # release keeps it: tests/unit/test_sql_history.py).
        patched = folder / f"{number}.patch"
        written.append(patched if patched in compact(function) else version)
    for function in dropped:
        folder = function_history.folder(function)
        for stale in folder.glob(f"{number}.*"):
            stale.unlink()
        if not function_history.versions(function):
            folder.rmdir()  # added by this open revision, never released
            continue
        tombstone = folder / f"{number}.dropped"
        tombstone.write_text(f"-- Revision {number} drops {function}.\n")
        written.append(tombstone)
    return written


def head_version_text(function: str) -> str:
    """A function's head file as a revision ships it: CREATE OR REPLACE (keeps grants)."""
    text = head_file_of(function).read_text()
    return re.sub(r"^CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ", text, flags=re.M)


def amend_revision(revision: str, changed: list[str], added: list[str], dropped: list[str]) -> None:
    """The open revision takes head's text of each function that changed
    since, and drops each that head dropped: its data ships whatever versions
    its number names, so nothing else changes."""
    for path in write_versions(revision[:4], changed + added, dropped):
        print(f"wrote {path.relative_to(REPO)}")
    steps = revision_data.load(revision)
    kinds = {kind for step in steps.upgrade_steps for kind in step}
    if "ship_functions" not in kinds:
        print(
            f"  sql/revisions/{revision}/revision.toml ships no function versions:"
            " add [[upgrade]] ship_functions = true and [[downgrade]] unship_functions = true"
        )


def start_revision(name: str, url: str) -> int:
    """Compare head with the migrations on the server at `url`, write revision
    NNNN_`name` from the difference (or amend the open revision) and say what
    it holds; 1 when head builds what the migrations build (nothing written),
    else 0."""
    changed, added, dropped, others = compare(url)
    if not (changed or added or dropped or others):
        print(f"sql/{HEAD}/ builds what the migrations build: nothing to start a revision from")
        return 1
    opened = open_revisions()
    if opened:
        print(f"{opened[-1]} is open (not released): amending it")
        amend_revision(opened[-1], changed, added, dropped)
        _tell_the_rest(others)
        return 0
    for path in write_revision(name, changed, added, dropped):
        print(f"wrote {path.relative_to(REPO)}")
    for label, names in (("changed", changed), ("added", added), ("dropped", dropped)):
        for function in names:
            print(f"  {label}: {function}")
    _tell_the_rest(others)
    return 0


def _tell_the_rest(others: list[str]) -> None:
    for kind in others:
        print(
            f"  {kind} differ: write that part by hand, in the revision's folder"
            " (sql/revisions/NNNN_name/), with a step in its revision.toml for each"
            " direction"
        )
    print(
        "Review them, set the locks in revision.toml and run `make test`; the revision"
        " stays open (amended by the next `make revision`) until"
        " `python -m devkit.schema.release VERSION` releases it."
    )
