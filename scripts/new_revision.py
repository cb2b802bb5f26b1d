"""`make revision NAME=...`: start a new revision from what changed in sql/head/.

    python -m scripts.new_revision NAME [--url URL]

It builds a schema from sql/head/ and one with `alembic upgrade head` (on
DATABASE_URL, else the development cluster), and compares them function by
function. Each function that head changed or added is copied, from its head
file, into sql/NNNN_NAME/ (as CREATE OR REPLACE, which keeps grants), and a
migration skeleton is written to migrations/versions/NNNN_NAME.py. Its
downgrade puts back each changed function from the newest released file
that defines it, and drops the added ones. Changes to tables, indexes or
views are listed for you to write by hand; nothing is released until its
digest is added to tests/deploy/test_released_revisions.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

from provider.deploy import migrate
from provider.deploy.resources import sql_dir
from provider.deploy.sql_files import released_folders
from scripts.catalogue import snapshot
from scripts.head_schema import HEAD, apply_head, head_files

REPO = Path(__file__).resolve().parent.parent
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
    for folder in released_folders():
        for path in sorted(folder.glob("*.sql")):
            if name in DEFINES.findall(path.read_text()):
                newest = f"{folder.name}/{path.name}"
    if newest is None:
        raise SystemExit(f"no revision defines {name}")
    return newest


def next_number() -> str:
    numbers = [int(folder.name[:4]) for folder in released_folders()]
    return f"{max(numbers) + 1:04d}"


MIGRATION = '''"""{title}

Revision ID: {number}
Revises: {previous}
Create Date: (fill in)
"""

from __future__ import annotations

from provider.deploy.migration_steps import apply_sql_files, drop_functions, replace_with_released

revision = "{number}"
down_revision = "{previous}"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, copied from sql/head/, applied in order.
FILES: list[str] = {files}
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {replaced}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = {added}


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files([*FILES, "0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
'''


def write_revision(name: str, changed: list[str], added: list[str]) -> tuple[Path, Path]:
    replaced: dict[str, list[str]] = {}
    for function in changed:
        replaced.setdefault(released_file_of(function), []).append(function)
    number = next_number()
    folder = sql_dir() / f"{number}_{name}"
    folder.mkdir()
    files = []
    for function in changed + added:
        text = head_file_of(function).read_text()
        text = re.sub(r"^CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ", text, flags=re.M)
        (folder / f"{function}.sql").write_text(text)
        files.append(f"{folder.name}/{function}.sql")
    migration = VERSIONS / f"{number}_{name}.py"
    # The skeleton as ruff would format it, so that `make lint` passes.
    migration.write_text(
        MIGRATION.format(
            title=name.replace("_", " ").capitalize() + ".",
            number=number,
            previous=migrate.head_revision(),
            replaced=json.dumps(replaced),
            added=json.dumps(added),
            files=json.dumps(files),
        )
    )
    subprocess.run([sys.executable, "-m", "ruff", "format", "-q", str(migration)], check=False)
    return folder, migration


def server_url(explicit: str | None) -> str:
    if explicit or os.environ.get("DATABASE_URL"):
        return str(explicit or os.environ["DATABASE_URL"])
    from scripts.devdb import start

    return start()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.new_revision")
    parser.add_argument("name", help="the revision's name, e.g. faster_ack")
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else the dev cluster)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        parser.error("NAME must be lower_snake_case")
    changed, added, dropped, others = compare(server_url(args.url))
    if not (changed or added or dropped or others):
        print(f"sql/{HEAD}/ builds what the migrations build: nothing to start a revision from")
        return 1
    folder, migration = write_revision(args.name, changed, added)
    print(f"wrote {folder.relative_to(REPO)}/ and {migration.relative_to(REPO)}")
    for label, names in (("changed", changed), ("added", added)):
        for function in names:
            print(f"  {label}: {function}")
    for function in dropped:
        print(f"  dropped from head: {function}: add drop_functions([...]) to upgrade() yourself")
    for kind in others:
        print(f"  {kind} differ: write that part (and its downgrade) by hand")
    print(
        "Review both, run `make test`, and add the folder's digest to"
        " tests/deploy/test_released_revisions.py when you release it."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
