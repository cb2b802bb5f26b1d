"""What every verb shares: where the hub is, how to print, exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from provider.schema_name import InvalidSchemaName, validate_schema_name

# Exit codes a pipeline can branch on.
OK = 0
PROBLEMS = 1  # check found drift, repair left some, an action was refused
USAGE = 2  # bad arguments (as click reports them)
NOT_FOUND = 3  # no such dead letter, instance or lease
UNREACHABLE = 4  # the database did not answer
DECLINED = 5  # asked before destroying, and the answer was no

console = Console()
errors = Console(stderr=True, soft_wrap=True)


def _schema(value: str) -> str:
    try:
        return validate_schema_name(value)
    except InvalidSchemaName as error:
        raise typer.BadParameter(str(error)) from None


Url = Annotated[
    str | None,
    typer.Option("--url", envvar="DATABASE_URL", help="libpq URL (default: DATABASE_URL)"),
]
Schema = Annotated[str, typer.Option("--schema", callback=_schema, help="the task hub's schema")]
AsJson = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="do not ask before destroying")]


def database_url(url: str | None) -> str:
    if not url:
        fail(USAGE, "--url is required (or set DATABASE_URL)")
    return url.replace("postgresql+psycopg://", "postgresql://")


def fail(code: int, message: str) -> NoReturn:
    errors.print(f"[red]taskhub-pg:[/red] {message}", highlight=False)
    raise typer.Exit(code)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


def print_counts(counts: dict[str, int], as_json: bool) -> None:
    """What an action did: {"instances_deleted": 1, ...} as JSON, or one line."""
    if as_json:
        print_json(counts)
    else:
        console.print(", ".join(f"{key.replace('_', ' ')} {n}" for key, n in counts.items()))


def print_rows(title: str, rows: Sequence[dict[str, Any]], empty: str = "none") -> None:
    """Rows as a table, the columns in the rows' order."""
    if not rows:
        console.print(f"{title}: {empty}")
        return
    table = Table(title=title, title_justify="left")
    for column in rows[0]:
        # One line per row; a cell too wide is cut (--json has it whole).
        table.add_column(column, overflow="ellipsis", no_wrap=True)
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row.values()))
    console.print(table)


def confirm(question: str, yes: bool) -> None:
    """Ask before destroying; --yes answers for a script. No tty: refuse."""
    if yes:
        return
    if not sys.stdin.isatty():
        fail(DECLINED, f"{question} Not confirmed: pass --yes to run it without asking.")
    if not typer.confirm(question, default=False):
        fail(DECLINED, "not confirmed: nothing changed")
