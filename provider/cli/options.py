"""What every verb shares: where the hub is, how to print, exit codes, and
how a verb ends on an error (`fail`: main() prints it, see failures.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from provider.cli.urls import InvalidUrl, libpq_url
from provider.client.connecting import masked, passwords_of
from provider.schema_name import InvalidSchemaName, validate_schema_name

# Exit codes a pipeline can branch on.
OK = 0
PROBLEMS = 1  # check found drift, repair left some, an action was refused
USAGE = 2  # bad arguments (as click reports them)
NOT_FOUND = 3  # no such dead letter, instance, lease or hub
UNREACHABLE = 4  # the database did not answer
DECLINED = 5  # asked before destroying, and the answer was no
INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT

console = Console()
_unbounded = Console(width=10_000)


def out() -> Console:
    """Where results go: a pipe or a file has no window to fit, so nothing
    there is cut or wrapped."""
    return console if console.is_terminal else _unbounded


errors = Console(stderr=True, soft_wrap=True)


class Failure(Exception):
    """How a verb ends on an error: main() prints `message` (and `hint`) as
    one line on stderr, or one JSON object under --json, and exits `code`."""

    def __init__(self, code: int, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def fail(code: int, message: str, hint: str | None = None) -> NoReturn:
    raise Failure(code, message, hint)


@dataclass
class Target:
    """What --url and --schema said: main() reads them to explain an error
    naming a table or function the schema lacks (a verb without its own check)."""

    url: str | None = None
    schema: str | None = None


target = Target()  # reset by main() for each command line


def _url(value: str | None) -> str | None:
    target.url = value
    return value


def _schema(value: str) -> str:
    try:
        schema = validate_schema_name(value)
    except InvalidSchemaName as error:
        fail(USAGE, f"--schema: {error}")
    target.schema = schema
    return schema


Url = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="DATABASE_URL", callback=_url, help="libpq URL (default: DATABASE_URL)"
    ),
]
Schema = Annotated[str, typer.Option("--schema", callback=_schema, help="the task hub's schema")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="do not ask before destroying")]


def database_url(url: str | None) -> str:
    """--url checked without connecting (exit 2 on a typo), as a libpq URL."""
    if not url or not url.strip():
        fail(USAGE, "--url is required (or set DATABASE_URL)")
    try:
        return libpq_url(url)
    except InvalidUrl as error:
        # libpq's own words may quote the password it could not read.
        problem = masked(str(error), passwords_of(url))
        fail(USAGE, f"--url {masked(url)!r}: {problem}", "e.g. postgresql://user@host:5432/dbname")


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def print_counts(counts: dict[str, int], as_json: bool) -> None:
    """What an action did: {"instances_deleted": 1, ...} as JSON, or one line."""
    if as_json:
        print_json(counts)
    else:
        out().print(", ".join(f"{key.replace('_', ' ')} {n}" for key, n in counts.items()))


# How wide a cell print_rows keeps whole: the first column's, any other's.
KEY_WIDTH = 40
SHORT_WIDTH = 10


def print_rows(title: str, rows: Sequence[dict[str, Any]], empty: str = "none") -> None:
    """Rows as a table, the columns in the rows' order."""
    if not rows:
        console.print(f"{title}: {empty}")
        return
    table = Table(title=title, title_justify="left")
    cells = [["" if value is None else str(value) for value in row.values()] for row in rows]
    for position, column in enumerate(rows[0]):
        # One line per row; a cell too wide is cut (--json has it whole). The
        # first column names the row and short ones (a status) stay whole.
        longest = max(len(row[position]) for row in cells)
        keep = min(longest, KEY_WIDTH if position == 0 else SHORT_WIDTH)
        table.add_column(column, overflow="ellipsis", no_wrap=True, min_width=keep)
    for row_cells in cells:
        table.add_row(*row_cells)
    out().print(table)


def confirm(question: str, yes: bool) -> None:
    """Ask before destroying; --yes answers for a script. No tty: refuse."""
    if yes:
        return
    if not sys.stdin.isatty():
        fail(DECLINED, f"{question} Not confirmed: pass --yes to run it without asking.")
    try:
        confirmed = typer.confirm(question, default=False)
    except typer.Abort:  # Ctrl-C or Ctrl-D at the question: a no
        confirmed = False
    if not confirmed:
        fail(DECLINED, "not confirmed: nothing changed")
