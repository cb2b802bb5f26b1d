"""The root of the command line: every verb, and the exit codes."""

from __future__ import annotations

import sys

import psycopg
import sqlalchemy.exc
import typer

from provider.cli import action_commands, deploy_commands, metrics_command
from provider.cli.inspect_commands import inspect_app
from provider.cli.options import PROBLEMS, UNREACHABLE, errors

app = typer.Typer(
    name="taskhub-pg",
    help="Deploy, check and operate a taskhub-pg task hub. URL from --url or DATABASE_URL."
    " Exit codes: 0 ok, 1 problems found or refused, 2 usage, 3 not found,"
    " 4 database unreachable, 5 not confirmed.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
deploy_commands.register(app)
app.add_typer(inspect_app, name="inspect")
action_commands.register(app)
metrics_command.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit code."""
    try:
        app(args=argv, prog_name="taskhub-pg")
    except SystemExit as done:  # every verb ends so, usage errors too (code 2)
        return done.code if isinstance(done.code, int) else 0
    except psycopg.OperationalError as error:
        errors.print(f"[red]taskhub-pg:[/red] database unreachable: {error}", highlight=False)
        return UNREACHABLE
    except sqlalchemy.exc.DBAPIError as error:
        # A migration refused by the database (Alembic runs on SQLAlchemy):
        # its message and hint, not a traceback. Nothing was applied.
        if isinstance(error.orig, psycopg.OperationalError):
            errors.print(f"[red]taskhub-pg:[/red] database unreachable: {error.orig}")
            return UNREACHABLE
        diag = getattr(error.orig, "diag", None)
        message = getattr(diag, "message_primary", None) or str(error.orig)
        hint = getattr(diag, "message_hint", None)
        errors.print(f"[red]taskhub-pg:[/red] refused, nothing changed: {message}", highlight=False)
        if hint:
            errors.print(f"  hint: {hint}", highlight=False)
        return PROBLEMS
    return 0


if __name__ == "__main__":
    sys.exit(main())
