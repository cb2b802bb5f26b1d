"""The SQL files under `sql/` that the Alembic revisions apply.

A released function's history is one folder, `sql/functions/<name>/`: one
file per revision that shipped a new version of its file, `NNNN.sql` for a
whole text, or `NNNN.patch` for a unified diff against the version before it
(what changed, and nothing that merely repeats the earlier copy). A revision
names a version by its whole text's path, `functions/<name>/NNNN.sql`,
whichever way it is kept; `read_sql` gives the text. A revision's other
files (tables, indexes, grants) and its data stay in its own folder,
`sql/revisions/NNNN_name/` (provider/deploy/revision_data.py).

The files name the schema with two tokens: `__SCHEMA__` where an identifier is
expected (replaced by the quoted schema) and `__SCHEMA_NAME__` inside string
literals (replaced by the bare, validated name). A fetch's turn type is
`__TURN_FORM__`: json (a new hub), or jsonb (a hub whose runtimes have the
older result type prepared; see provider/deploy/turn_form.py).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from provider.deploy.sql_checks import expand_checks
from provider.resources import sql_dir
from provider.schema_name import quote_schema, validate_schema_name

# A revision's folder: sql/revisions/NNNN_name/.
REVISIONS = "revisions"
RELEASED_FOLDER = re.compile(r"^(\d{4})_\w+$")
FUNCTIONS = "functions"
_VERSION = re.compile(r"^(\d{4})\.(sql|patch)$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def released_folders(up_to: str | None = None) -> list[Path]:
    """The released revisions' folders, oldest first; with up_to, only those
    of revisions at or below it ("0012")."""
    found = []
    for folder in (sql_dir() / REVISIONS).iterdir():
        number = RELEASED_FOLDER.match(folder.name)
        if number and folder.is_dir() and (up_to is None or number.group(1) <= up_to):
            found.append(folder)
    return sorted(found, key=lambda folder: folder.name)


def function_versions(name: str) -> list[str]:
    """The revisions ("0015", ...) that shipped a version of function file
    `name`, oldest first."""
    folder = sql_dir() / FUNCTIONS / name
    if not folder.is_dir():
        return []
    found = {match.group(1) for path in folder.iterdir() if (match := _VERSION.match(path.name))}
    return sorted(found)


def released_files(up_to: str | None = None) -> list[tuple[str, str]]:
    """(revision, path relative to sql/) of every released file, in the
    order the revisions shipped them: by revision, then by file name."""
    found = [
        (folder.name[:4], f"{REVISIONS}/{folder.name}/{path.name}")
        for folder in released_folders(up_to)
        for path in folder.glob("*.sql")
    ]
    functions = sql_dir() / FUNCTIONS
    names = sorted(path.name for path in functions.iterdir()) if functions.is_dir() else []
    for name in names:
        found += [
            (number, f"{FUNCTIONS}/{name}/{number}.sql")
            for number in function_versions(name)
            if up_to is None or number <= up_to
        ]
    return sorted(found, key=lambda file: (file[0], shipped_name(file[1])))


def shipped_name(relative_path: str) -> str:
    """A released file's name as its revision shipped it: a function
    version functions/<name>/NNNN.sql is named after its function."""
    parts = Path(relative_path).parts
    return f"{parts[1]}.sql" if parts[0] == FUNCTIONS else parts[-1]


def is_downgrade_file(relative_path: str) -> bool:
    """A revision's downgrade step (down.sql, down_<what>.sql, downgrade_...):
    it puts earlier definitions back, so it never says what a revision runs."""
    return Path(relative_path).parts[0] != FUNCTIONS and Path(relative_path).name.startswith("down")


def _lines(text: str) -> list[str]:
    """Lines with their newline; only \n ends one (a diff's own convention)."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def apply_patch(text: str, patch: str) -> str:
    """`text` changed by a unified diff made from it (each hunk checked line
    by line: a patch that does not fit raises ValueError)."""
    old, out, at = _lines(text), [], 0
    lines = _lines(patch)
    index = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
    while index < len(lines):
        hunk = _HUNK.match(lines[index])
        if hunk is None:
            raise ValueError(f"not a hunk: {lines[index]!r}")
        start, count = int(hunk.group(1)), int(hunk.group(2) or "1")
        begins = start - 1 if count else start  # an empty side names the line before it
        out += old[at:begins]
        at = begins
        index += 1
        while index < len(lines) and not lines[index].startswith("@@"):
            tag, line = lines[index][0], lines[index][1:]
            if tag in " -":
                if at >= len(old) or old[at] != line:
                    raise ValueError(f"the patch does not fit at line {at + 1}: {line!r}")
                at += 1
            if tag in " +":
                out.append(line)
            index += 1
    return "".join(out + old[at:])


def read_sql(relative_path: str) -> str:
    """The text of a file under sql/: a function version kept as a patch is
    its previous version's text with the patch applied."""
    path = sql_dir() / relative_path
    if path.is_file():
        return _read_file(path, path.stat().st_mtime_ns)
    patch = path.with_suffix(".patch")
    parts = Path(relative_path).parts
    if not patch.is_file() or len(parts) != 3 or parts[0] != FUNCTIONS:
        raise FileNotFoundError(f"sql/{relative_path}")
    versions = function_versions(parts[1])
    before = versions[versions.index(path.stem) - 1]
    previous = f"{FUNCTIONS}/{parts[1]}/{before}.sql"
    return _patched(read_sql(previous), patch, patch.stat().st_mtime_ns)


# A migration reads a few hundred files, most of them patched: each text is
# read (and each patch applied) once per process, again only when its file
# changed (a revision being written, a release compacting the history).
@functools.cache
def _read_file(path: Path, mtime_ns: int) -> str:
    return path.read_text(encoding="utf-8")


@functools.cache
def _patched(previous: str, patch: Path, mtime_ns: int) -> str:
    return apply_patch(previous, patch.read_text(encoding="utf-8"))


# The two forms of a fetch's turn (history, messages, KV snapshot).
TURN_FORMS = ("json", "jsonb")


def render_text(text: str, schema: str, turn_form: str = "json") -> str:
    """SQL text with its checks written out (provider/deploy/sql_checks.py),
    the schema substituted for its two tokens, and the turn's form."""
    return substitute_tokens(expand_checks(text), schema, turn_form)


def substitute_tokens(text: str, schema: str, turn_form: str = "json") -> str:
    """SQL text whose checks are written out already, with the schema
    substituted for its two tokens, and the turn's form."""
    if turn_form not in TURN_FORMS:
        raise ValueError(f"turn_form must be one of {TURN_FORMS}, not {turn_form!r}")
    return (
        text.replace("__SCHEMA_NAME__", validate_schema_name(schema))
        .replace("__SCHEMA__", quote_schema(schema))
        .replace("__TURN_FORM__", turn_form)
    )


def render_sql(relative_path: str, schema: str, turn_form: str = "json") -> str:
    """The text of one SQL file with the schema substituted."""
    return render_text(read_sql(relative_path), schema, turn_form)
