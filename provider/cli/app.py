"""The root of the command line: every verb, the exit codes, and how an
error ends a verb: one line on stderr (one JSON object under --json)."""

from __future__ import annotations

import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from provider.cli import (
    action_commands,
    citus_commands,
    dashboard_command,
    deploy_commands,
    flow_commands,
    instance_commands,
    metrics_command,
    role_commands,
    schedule_commands,
    turn_form_command,
)
from provider.cli.failures import failure_of, one_line, report, said
from provider.cli.inspect_commands import inspect_app
from provider.cli.interrupts import Watchdog
from provider.cli.options import INTERRUPTED, OK, PROBLEMS, USAGE, Failure, target

PROG = "taskhub-pg"
SERVES_UNTIL_CTRL_C = frozenset({"dashboard", "metrics"})
# psycopg logs what it could not do itself (a cancel the server refused, say)
# through logging's last resort: a second line on stderr, beside the one the
# verb ends with. A verb that logs (the dashboard) configures its own handlers.
_PSYCOPG_WARNINGS = logging.NullHandler()


def interrupted() -> Failure:
    return Failure(INTERRUPTED, "interrupted", "the transaction under way, if any, rolled back")


class _Root(TyperGroup):
    """Ctrl-C during a verb: exit 130 with one line (Typer's own is silent)."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise interrupted() from None


app = typer.Typer(
    name=PROG,
    cls=_Root,
    help="Deploy, check and operate a taskhub-pg task hub. The database from DATABASE_URL"
    " (or --url, or libpq's PGSERVICE / PGHOST with a pgpass file)."
    " Exit codes: 0 ok, 1 problems found or refused, 2 usage, 3 not found (no hub in --schema"
    " among them), 4 database unreachable, 5 not confirmed, 130 interrupted."
    " An error is one line on stderr; under --json it is one JSON object on stderr"
    ' ({"error": ..., "exit_code": ..., "hint": ...}) and stdout stays empty.',
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion for bash, zsh, fish and PowerShell
)


def _package_version() -> str:
    try:
        return version(PROG)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(version unknown: not installed)"


def _show_version(value: bool) -> None:
    if value:
        print(f"{PROG} {_package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="print the version and exit"
        ),
    ] = False,
) -> None:
    pass


deploy_commands.register(app)
role_commands.register(app)
app.add_typer(inspect_app, name="inspect")
action_commands.register(app)
instance_commands.register(app)
turn_form_command.register(app)
metrics_command.register(app)
dashboard_command.register(app)
citus_commands.register(app)
schedule_commands.register(app)
flow_commands.register(app)


def wants_json(args: list[str]) -> bool:
    """--json anywhere among the options (before a `--`): errors as JSON too,
    even those found before the verb's own --json was parsed."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def _exit_code(done: SystemExit, as_json: bool) -> int:
    """Every verb ends with SystemExit (Typer's standalone mode). A text code
    is a message (the migration runner's, say): exit 1, as Python would."""
    if done.code is None or isinstance(done.code, int):
        return done.code or OK
    message = one_line(done.code).removeprefix(f"{PROG}: ")
    report(Failure(PROBLEMS, message), as_json)
    return PROBLEMS


def _run_for_json(args: list[str]) -> int:
    """The verb, with what the parser finds wrong in the arguments (a missing
    option, a bad choice) as one JSON object too, instead of its usage panel.
    Typer's parser errors are TyperExceptions carrying their exit code (2)."""
    try:
        code = app(args=args, prog_name=PROG, standalone_mode=False)
    except typer.TyperException as error:
        context = getattr(error, "ctx", None)
        command = getattr(context, "command_path", None) or PROG
        exit_code = int(getattr(error, "exit_code", USAGE))
        report(Failure(exit_code, error.format_message(), f"see {command} --help"), as_json=True)
        return exit_code
    except typer.Abort:  # Ctrl-D at a question: as without --json, exit 1
        report(Failure(PROBLEMS, "aborted: nothing changed"), as_json=True)
        return PROBLEMS
    return code if isinstance(code, int) else OK


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit code. No psycopg, SQLAlchemy, Alembic or
    provider error gets out as a traceback: failures.failure_of maps each.
    Without argv this process is the command line (the console script,
    python -m provider): Ctrl-C then ends it within interrupts.GRACE_S
    whatever the verb waits on."""
    args = sys.argv[1:] if argv is None else list(argv)
    as_json = wants_json(args)
    watchdog = None
    if argv is None and not _serves(args):
        line = said(interrupted(), as_json)
        watchdog = Watchdog(line if as_json else f"{PROG}: {line}").arm()
    target.url = target.schema = None  # what an earlier run in this process said
    logging.getLogger("psycopg").addHandler(_PSYCOPG_WARNINGS)
    target.as_json = as_json
    code = _run(args, as_json)
    if code == INTERRUPTED and watchdog is not None:
        watchdog.said()
    return code


def _serves(args: list[str]) -> bool:
    """A verb that serves until Ctrl-C, which is its clean stop (exit 0): it
    shuts its server down itself, and no watchdog cuts that short."""
    verb = next((arg for arg in args if not arg.startswith("-")), None)
    return verb in SERVES_UNTIL_CTRL_C


def _run(args: list[str], as_json: bool) -> int:
    try:
        if as_json:
            return _run_for_json(args)
        app(args=args, prog_name=PROG)
    except SystemExit as done:
        return _exit_code(done, as_json)
    except Exception as error:
        failure = failure_of(error)
        if failure is None:
            raise
        report(failure, as_json)
        return failure.code
    return OK


if __name__ == "__main__":
    sys.exit(main())
