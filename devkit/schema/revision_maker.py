"""What `make revision NAME=...` does (scripts/new_revision.py is its command
line): start a new revision from what changed in sql/head/.

It builds a schema from sql/head/ and one with `alembic upgrade head`, and
compares them function by function. Each function that head changed or added
is copied, from its head file, into its history as that revision's version,
sql/functions/<function>/NNNN.sql (as CREATE OR REPLACE, which keeps grants;
`python -m devkit.schema.sql_history compact` keeps it as a patch at the
release), and a migration skeleton is written to
migrations/versions/NNNN_NAME.py. Its downgrade puts back each changed
function from the newest released file that defines it, and drops the added
ones. Changes to tables, indexes or views are listed for you to write by
hand. Nothing is released until `python -m devkit.schema.release VERSION`
pins it (devkit/schema/releases.py); while the newest revision is open,
`make revision` amends it instead of starting another: each function head
changed since gets its new text as that revision's version.
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
from provider.deploy import migrate
from provider.deploy.migration_options import MigrationOptions
from provider.deploy.sql_files import FUNCTIONS, read_sql, released_files
from provider.resources import sql_dir

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
    """The newest revision file that defines `name` (relative to sql/)."""
    newest = None
    for _, path in released_files():
        if name in DEFINES.findall(read_sql(path)):
            newest = path
    if newest is None:
        raise SystemExit(f"no revision defines {name}")
    return newest


def next_number() -> str:
    numbers = [int(number) for number, _ in released_files()]
    return f"{max(numbers) + 1:04d}"


def write_revision(name: str, changed: list[str], added: list[str]) -> tuple[list[Path], Path]:
    replaced: dict[str, list[str]] = {}
    for function in changed:
        replaced.setdefault(released_file_of(function), []).append(function)
    number = next_number()
    files, written = [], []
    for function in changed + added:
        version = sql_dir() / FUNCTIONS / function / f"{number}.sql"
        version.parent.mkdir(parents=True, exist_ok=True)
        version.write_text(head_version_text(function))
        written.append(version)
        files.append(f"{FUNCTIONS}/{function}/{number}.sql")
    # The one skeleton, migrations/script.py.mako, as `alembic revision` writes
    # it, with this revision's files; then as ruff formats it (`make lint`).
    config = migrate.alembic_config(MigrationOptions())
    script = ScriptDirectory.from_config(config).generate_revision(
        number,
        name.replace("_", " ").capitalize() + ".",
        head=migrate.head_revision(),
        files=files,
        replaced=replaced,
        added=added,
    )
    assert script is not None
    migration = Path(script.path)
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(migration)], check=False)
    return written, migration


def head_version_text(function: str) -> str:
    """A function's head file as a revision ships it: CREATE OR REPLACE (keeps grants)."""
    text = head_file_of(function).read_text()
    return re.sub(r"^CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ", text, flags=re.M)


def amend_revision(revision: str, changed: list[str], added: list[str]) -> list[str]:
    """The open revision takes head's text of each function that changed
    since: its own version of it is rewritten, or written anew. The lines
    a new version needs in the revision's module, to add by hand."""
    number, missing = revision[:4], []
    for function in changed + added:
        version = sql_dir() / FUNCTIONS / function / f"{number}.sql"
        if not version.is_file():
            version.parent.mkdir(parents=True, exist_ok=True)
            where = "FILES, and REPLACED" if function in changed else "FILES, and NEW_FUNCTIONS"
            missing.append(f"{FUNCTIONS}/{function}/{number}.sql: add it to {where}")
        version.write_text(head_version_text(function))
        print(f"wrote {version.relative_to(REPO)}")
    return missing


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
        for line in amend_revision(opened[-1], changed, added):
            print(f"  in migrations/versions/{opened[-1]}.py: {line}")
        _tell_the_rest(dropped, others)
        return 0
    written, migration = write_revision(name, changed, added)
    for path in [*written, migration]:
        print(f"wrote {path.relative_to(REPO)}")
    for label, names in (("changed", changed), ("added", added)):
        for function in names:
            print(f"  {label}: {function}")
    _tell_the_rest(dropped, others)
    return 0


def _tell_the_rest(dropped: list[str], others: list[str]) -> None:
    for function in dropped:
        print(f"  dropped from head: {function}: add drop_functions([...]) to upgrade() yourself")
    for kind in others:
        print(f"  {kind} differ: write that part (and its downgrade) by hand")
    print(
        "Review them and run `make test`; the revision stays open (amended by the next"
        " `make revision`) until `python -m devkit.schema.release VERSION` releases it."
    )
