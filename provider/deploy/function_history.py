"""Which version of a function a revision runs: one answer, read from the
function's history alone (sql/functions/<name>/).

Each file of the folder is a version, named by the revision that shipped it:
`NNNN.sql` (the whole text), `NNNN.patch` (a diff against the version
before: provider/deploy/sql_files.py reads it back) or `NNNN.dropped` (the
revision dropped the function; its text says why). A hub at revision N runs
the newest version numbered N or below, none if that one is a drop.

The runner (the `ship_functions` and `unship_functions` steps of a
revision's data, run by provider/deploy/revision_data.py's `ship` and
`unship`), the turn form's switch, `taskhub-pg repair`, `make revision` and
the docs' SQL reference all ask here. Revisions 0001-0028 name their files in
their data, as they ran them; tests/unit/test_function_histories.py holds
those names to this answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from provider.deploy.sql_files import FUNCTIONS, read_sql
from provider.resources import sql_dir

DROPPED = "dropped"
_VERSION = re.compile(r"^(\d{4})\.(sql|patch|dropped)$")
# A fetch whose result type is the hub's turn form (json or jsonb): replaced
# keeping the form the hub's runtimes have prepared (provider/deploy/turn_form.py).
TURN_FORM_TOKEN = "__TURN_FORM__"


@dataclass(frozen=True)
class Version:
    function: str
    revision: str  # NNNN
    dropped: bool

    @property
    def path(self) -> str:
        """Its text's path relative to sql/ (a patch is read back whole)."""
        return f"{FUNCTIONS}/{self.function}/{self.revision}.sql"

    def takes_turn_form(self) -> bool:
        return not self.dropped and TURN_FORM_TOKEN in read_sql(self.path)


def names() -> list[str]:
    """Every function with a history."""
    root = sql_dir() / FUNCTIONS
    return sorted(path.name for path in root.iterdir() if path.is_dir())


def versions(function: str) -> list[Version]:
    """Its versions, oldest first."""
    folder = sql_dir() / FUNCTIONS / function
    found: dict[str, bool] = {}
    for path in folder.iterdir() if folder.is_dir() else []:
        match = _VERSION.match(path.name)
        if match:
            found[match.group(1)] = found.get(match.group(1), False) or match.group(2) == DROPPED
    return [Version(function, number, found[number]) for number in sorted(found)]


def version_at(function: str, revision: str) -> Version | None:
    """The version a hub at `revision` runs (None: none, or dropped)."""
    shipped = [v for v in versions(function) if v.revision <= revision]
    if not shipped or shipped[-1].dropped:
        return None
    return shipped[-1]


def shipped_at(revision: str) -> list[Version]:
    """The versions revision `revision` ships, by function name."""
    found = []
    for function in names():
        here = [v for v in versions(function) if v.revision == revision]
        found += here
    return found


def before(version: Version) -> Version | None:
    """The version a hub ran before this one shipped."""
    earlier = f"{int(version.revision) - 1:04d}"
    return version_at(version.function, earlier)


def folder(function: str) -> Path:
    return sql_dir() / FUNCTIONS / function
