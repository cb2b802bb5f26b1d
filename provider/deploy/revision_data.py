"""A revision is data: sql/revisions/NNNN_name/revision.toml, beside the SQL
files only that revision runs (its tables, indexes, grants: the hand-written
DDL). Its Alembic module in migrations/versions/ is the same few lines for
every revision, naming its folder; Alembic stays the entry point.

    id = "0026"
    down = "0025"
    summary = '''what it changes, for the changelog and `alembic history`'''
    locks_on_upgrade = []          # the tables each direction locks
    locks_on_downgrade = []        # (provider/deploy/table_locks.py)
    changes_result_type_on_downgrade = []   # rare: a deliberate switch

    [[upgrade]]                    # the steps, in order
    apply = ["revisions/0026_plans_that_keep_queues_clean/operator_privileges.sql"]
    [[upgrade]]
    ship_functions = true          # every function version of this revision
    [[downgrade]]
    unship_functions = true        # each put back as the revision before ran it

Which version of a function a revision runs is read from its history
(sql/functions/<name>/, provider/deploy/function_history.py), so a new
revision lists no function: `ship_functions` applies each version its number
names, a fetch that takes a turn form kept in the form the hub hands over,
and drops a function whose history ends there (NNNN.dropped);
`unship_functions` puts back the version before each, or drops a function
new there. Released revisions name their files as they shipped them (each
list is what they ran, statement for statement: migrations/released.json
pins the digest of those statements).

The other steps are provider/deploy/migration_steps.py's: `apply` (a file, or
a list of files sent as one statement), `set_aside_functions`,
`drop_and_restore_functions`, `drop_functions`, `replace_with_released`
(files, each with the functions it puts back, or all of them),
`create_fetch_in_turn_form`, `replace_fetch_keeping_its_form` and
`drop_fetch_of_form`.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provider.deploy import function_history, migration_steps
from provider.resources import sql_dir

REVISIONS = "revisions"
DATA_FILE = "revision.toml"

Step = dict[str, Any]
Apply = str | list[str]  # a file, or files sent as one statement


class RevisionDataError(ValueError):
    """A revision's data names a step or a value the runner does not know."""


@dataclass(frozen=True)
class RevisionData:
    """One revision, as its data folder says."""

    folder: str  # NNNN_name
    id: str
    down: str | None
    summary: str
    locks_on_upgrade: list[str]
    locks_on_downgrade: list[str]
    changes_result_type_on_downgrade: list[str] = field(default_factory=list)
    upgrade_steps: list[Step] = field(default_factory=list)
    downgrade_steps: list[Step] = field(default_factory=list)

    def upgrade(self) -> None:
        run_steps(self.id, self.upgrade_steps, upgrade=True)

    def downgrade(self) -> None:
        run_steps(self.id, self.downgrade_steps, upgrade=False)


def folder_of(module_file: str) -> str:
    """migrations/versions/NNNN_name.py names sql/revisions/NNNN_name/."""
    return Path(module_file).stem


def load_for(module_file: str) -> RevisionData:
    """The data of the Alembic module `module_file` (its __file__)."""
    folder = folder_of(module_file)
    if not data_path(folder).is_file():
        raise RevisionDataError(
            f"{data_path(folder)} does not exist: a revision's module runs its data"
            " (`make revision NAME=...` writes both)"
        )
    data = load(folder)
    if data.id != folder[:4]:
        raise RevisionDataError(f"{data_path(folder)}: id {data.id} in folder {folder}")
    return data


def data_path(folder: str) -> Path:
    return sql_dir() / REVISIONS / folder / DATA_FILE


@functools.cache
def load(folder: str) -> RevisionData:
    """The revision whose data is sql/revisions/<folder>/revision.toml."""
    with data_path(folder).open("rb") as data:
        raw = tomllib.load(data)
    try:
        return RevisionData(
            folder=folder,
            id=str(raw["id"]),
            down=None if raw.get("down") is None else str(raw["down"]),
            summary=str(raw.get("summary", "")),
            locks_on_upgrade=list(raw["locks_on_upgrade"]),
            locks_on_downgrade=list(raw["locks_on_downgrade"]),
            changes_result_type_on_downgrade=list(raw.get("changes_result_type_on_downgrade", [])),
            upgrade_steps=list(raw.get("upgrade", [])),
            downgrade_steps=list(raw.get("downgrade", [])),
        )
    except KeyError as missing:
        raise RevisionDataError(f"{data_path(folder)}: no {missing}") from None


def revision_folders() -> list[str]:
    """Every revision's data folder, oldest first."""
    root = sql_dir() / REVISIONS
    return sorted(path.parent.name for path in root.glob(f"*/{DATA_FILE}"))


# -- running the steps ------------------------------------------------------


def ship(revision: str) -> None:
    """The upgrade's part: each version `revision` ships applied (a fetch in
    its turn form, kept as the hub has it), each function it drops dropped."""
    shipped = function_history.shipped_at(revision)
    plain = [v.path for v in shipped if not v.dropped and not v.takes_turn_form()]
    if plain:
        migration_steps.apply_sql_files(plain)
    for version in shipped:
        if version.takes_turn_form():
            migration_steps.replace_fetch_keeping_its_form(version.path)
    dropped = [v.function for v in shipped if v.dropped]
    if dropped:
        migration_steps.drop_functions(dropped)


def unship(revision: str) -> None:
    """The downgrade's part: each function `revision` shipped put back as the
    revision before ran it (a fetch kept in its turn form), or dropped where
    it is new there."""
    back: dict[str, list[str]] = {}
    new = []
    for version in function_history.shipped_at(revision):
        earlier = function_history.before(version)
        if earlier is None:
            new.append(version.function)
        elif earlier.takes_turn_form():
            migration_steps.replace_fetch_keeping_its_form(earlier.path)
        else:
            back.setdefault(earlier.path, []).append(version.function)
    if back:
        migration_steps.replace_with_released(list(back), back)
    if new:
        migration_steps.drop_functions(new)


def _apply(entries: list[Apply]) -> None:
    """Each entry is one statement: a file, or several sent as one (a file a
    released revision shipped whole, now kept as its functions' versions)."""
    migration_steps.apply_sql_files(entries)


def _replace_with_released(entries: list[dict[str, Any]]) -> None:
    files: list[Apply] = [entry["file"] for entry in entries]
    named = {
        migration_steps.source_key(entry["file"]): list(entry["functions"])
        for entry in entries
        if "functions" in entry
    }
    migration_steps.replace_with_released(files, named or None)


_STEPS: dict[str, Callable[[Any], None]] = {
    "apply": _apply,
    "set_aside_functions": migration_steps.set_aside_functions,
    "drop_and_restore_functions": migration_steps.drop_and_restore_functions,
    "drop_functions": migration_steps.drop_functions,
    "replace_with_released": _replace_with_released,
    "create_fetch_in_turn_form": lambda _: migration_steps.create_fetch_in_turn_form(),
    "replace_fetch_keeping_its_form": migration_steps.replace_fetch_keeping_its_form,
    "drop_fetch_of_form": migration_steps.drop_fetch_of_form,
}


def run_steps(revision: str, steps: list[Step], *, upgrade: bool) -> None:
    for step in steps:
        if len(step) != 1:
            raise RevisionDataError(f"revision {revision}: one kind a step, not {sorted(step)}")
        ((kind, value),) = step.items()
        if kind == "ship_functions":
            ship(revision)
        elif kind == "unship_functions":
            unship(revision)
        elif kind in _STEPS:
            _STEPS[kind](value)
        else:
            raise RevisionDataError(f"revision {revision}: no step {kind!r}")
