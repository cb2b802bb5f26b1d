"""What every verb shares: where the hub is, how to print, exit codes, and
how a verb ends on an error (`fail`: main() prints it, see failures.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn

import typer
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from provider.cli.plain import plain, visible, visible_lines
from provider.cli.urls import InvalidUrl, libpq_environment, libpq_url
from provider.masking import has_password, mask_url
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


def say(text: object) -> None:
    """A result on stdout, as plain text (it may quote stored values): its line
    breaks and tabs kept, every other control character shown as its escape."""
    out().print(Text(visible_lines(text)), highlight=False)


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
    naming a table or function the schema lacks (a verb without its own
    check), and masks every form of the URL's password in what it prints.
    `as_json`: errors and warnings go to stderr as JSON objects."""

    url: str | None = None
    schema: str | None = None
    as_json: bool = False


target = Target()  # reset by main() for each command line

PASSWORD_IN_ARGUMENTS = (
    "warning: --url carries a password, which every user of this machine can read"
    " (ps, /proc); set DATABASE_URL instead, or use a service file (PGSERVICE) or a"
    " pgpass file (PGPASSFILE, ~/.pgpass)"
)


def warn(message: str) -> None:
    """One warning line on stderr (a JSON object under --json)."""
    if target.as_json:
        sys.stderr.write(json.dumps({"warning": message}) + "\n")
    else:
        errors.print(plain(f"taskhub-pg: {message}"), highlight=False)


def _url(ctx: typer.Context, value: str | None) -> str | None:
    target.url = value
    source = ctx.get_parameter_source("url")  # typed, or from DATABASE_URL
    typed = source is not None and source.name == "COMMANDLINE"
    if value and typed and has_password(value):
        warn(PASSWORD_IN_ARGUMENTS)
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
        "--url",
        envvar="DATABASE_URL",
        callback=_url,
        help="libpq URL (default: DATABASE_URL, else libpq's PGSERVICE / PGHOST ...);"
        " a password here shows in ps: keep it in DATABASE_URL or a pgpass file",
    ),
]
Schema = Annotated[
    str,
    typer.Option(
        "--schema", envvar="TASKHUB_SCHEMA", callback=_schema, help="the task hub's schema"
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="do not ask before destroying")]


EXAMPLE_URL = "e.g. postgresql://host:5432/dbname?user=name"
NO_DATABASE = "--url is required (or set DATABASE_URL, or PGSERVICE / PGHOST for libpq)"


def database_url(url: str | None) -> str:
    """--url (or DATABASE_URL) checked without connecting (exit 2 on a typo),
    as a libpq URL; without either, libpq's environment (PGSERVICE, PGHOST...)."""
    if url is None:
        url = libpq_environment()
    if not url or not url.strip():
        fail(USAGE, NO_DATABASE)
    try:
        return libpq_url(url)
    except InvalidUrl as error:  # its words quote nothing of the user or password
        fail(USAGE, f"--url {mask_url(url)!r}: {error}", EXAMPLE_URL)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def print_counts(counts: Mapping[str, int | str], as_json: bool) -> None:
    """What an action did: {"instances_deleted": 1, ...} as JSON, or one line."""
    if as_json:
        print_json(counts)
    else:
        say(", ".join(f"{key.replace('_', ' ')} {n}" for key, n in counts.items()))


# How wide a cell print_rows keeps at least, when the terminal is narrow:
# the first column's (it names the row), any other's. A column that would
# get less is left out, from the right, and the table says so.
SHORT_WIDTH = 10
MIN_KEY_WIDTH = 16


# A table's border and padding: 3 characters per column, and 1.
def _table_width(widths: Sequence[int]) -> int:
    return sum(widths) + 3 * len(widths) + 1


def _least_widths(widths: list[int]) -> list[int]:
    return [min(widths[0], MIN_KEY_WIDTH)] + [min(width, SHORT_WIDTH) for width in widths[1:]]


def _column_widths(widths: list[int], room: int) -> list[int]:
    """The width of each column shown in `room` characters: whole when the
    table fits; else the leading columns that fit at their least, the room
    left handed out to whichever is cut the most."""
    least = _least_widths(widths)
    shown = 1
    while shown < len(widths) and _table_width(least[: shown + 1]) <= room:
        shown += 1
    natural, sizes = widths[:shown], least[:shown]
    if _table_width(natural) <= room:
        return natural
    for _ in range(max(room - _table_width(sizes), 0)):
        cut = [want - size for want, size in zip(natural, sizes, strict=True)]
        if max(cut) <= 0:
            break
        sizes[cut.index(max(cut))] += 1
    return sizes


def print_rows(title: str, rows: Sequence[dict[str, Any]], empty: str = "none") -> None:
    """Rows as a table, the columns in the rows' order, one line per row
    however narrow the terminal: a cell too wide is cut with an ellipsis,
    and columns that cannot fit are left out from the right, saying so
    (--json has everything whole). Every cell is plain text (plain.py: a
    stored id is never markup, nor an escape sequence)."""
    if not rows:
        say(f"{title}: {empty}")
        return
    console = out()
    columns = list(rows[0])
    cells = [[visible("" if value is None else value) for value in row.values()] for row in rows]
    widths = [
        max(cell_len(column), *(cell_len(row[position]) for row in cells))
        for position, column in enumerate(columns)
    ]
    sizes = _column_widths(widths, console.width)
    shown = len(sizes)
    table = Table(title=plain(title), title_justify="left")
    for column, size in zip(columns, sizes, strict=False):
        table.add_column(plain(column), width=size, overflow="ellipsis", no_wrap=True)
    for row_cells in cells:
        table.add_row(*(plain(cell) for cell in row_cells[:shown]))
    console.print(table, highlight=False)
    if shown < len(columns):
        left_out = ", ".join(columns[shown:])
        say(f"left out to fit {console.width} columns: {left_out} (--json has them)")


def confirm(question: str, yes: bool) -> None:
    """Ask before destroying; --yes answers for a script. No tty: refuse."""
    if yes:
        return
    question = visible(question)  # it may name a stored id
    if not sys.stdin.isatty():
        fail(DECLINED, f"{question} Not confirmed: pass --yes to run it without asking.")
    try:
        confirmed = typer.confirm(question, default=False)
    except typer.Abort:  # Ctrl-C or Ctrl-D at the question: a no
        confirmed = False
    if not confirmed:
        fail(DECLINED, "not confirmed: nothing changed")
