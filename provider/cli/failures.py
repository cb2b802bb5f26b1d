"""What an error becomes on the command line: an exit code and one line on
stderr (one JSON object under --json), never a traceback.

A verb ends with `fail` where it knows better; whatever it leaves unhandled
(from psycopg, the deploy layer, the provider or the OS) is mapped here
by main().
"""

from __future__ import annotations

import json
import sys

import psycopg
from rich.text import Text

from provider.cli.hubs import explain_missing
from provider.cli.options import (
    NOT_FOUND,
    PROBLEMS,
    UNREACHABLE,
    USAGE,
    Failure,
    errors,
    target,
)
from provider.cli.plain import visible
from provider.deploy.refusals import MigrationMisused, MigrationRefused
from provider.errors import (
    ConfigurationError,
    DeadLetterNotFound,
    InstanceEnded,
    InstanceNotFound,
    InstanceRunning,
    NoLeaseHeld,
    StartConflict,
    TaskHubError,
)
from provider.masking import masked, passwords_of

# undefined_table, undefined_function, invalid_schema_name: the hub (or the
# part of it a verb reads) is not in --schema.
MISSING_OBJECT = ("42P01", "42883", "3F000")
INSUFFICIENT_PRIVILEGE = "42501"
# The server went away: admin_shutdown, crash_shutdown, cannot_connect_now.
_GONE = ("57P01", "57P02", "57P03")
WRONG_SCHEMA_HINT = "is --schema right? taskhub-pg status --schema NAME says what a schema holds"


def one_line(text: object) -> str:
    """libpq's messages run over several lines (a hint tab-indented below)."""
    return " ".join(str(text).split())


def shown(text: object) -> str:
    """An error's text as it may be printed: one line, every form of the
    URL's password masked (and any URL's user and password), and control
    characters shown as escapes (plain.visible)."""
    passwords = passwords_of(target.url) if target.url else ()
    return visible(masked(one_line(text), passwords))


def said(failure: Failure, as_json: bool) -> str:
    """The failure's line without its colour: one JSON object under --json,
    else the message, then its hint, as `shown` makes them."""
    message = shown(failure.message)
    hint = shown(failure.hint) if failure.hint else None
    if as_json:
        return json.dumps({"error": message, "exit_code": failure.code, "hint": hint})
    return f"{message}; {hint}" if hint else message


def report(failure: Failure, as_json: bool) -> None:
    """The failure on stderr (the prefix red on a terminal)."""
    if as_json:
        sys.stderr.write(said(failure, as_json) + "\n")
        return
    errors.print(
        Text.assemble(("taskhub-pg:", "red"), " ", said(failure, as_json)), highlight=False
    )


def is_unreachable(error: psycopg.Error) -> bool:
    """A failure to connect, or a connection lost: no SQLSTATE, or class 08."""
    state = error.sqlstate
    if state is None:
        return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
    return state.startswith("08") or state in _GONE


def _missing(error: psycopg.Error | TaskHubError, message: str, hint: str | None) -> Failure:
    """No such table or function: most often a forgotten --schema."""
    found = explain_missing(target.url, target.schema, error)
    return found or Failure(NOT_FOUND, message, hint or WRONG_SCHEMA_HINT)


def database_failure(error: psycopg.Error, outcome: str = "nothing changed") -> Failure:
    """A psycopg error: unreachable (4), no such object (3), else refused (1)
    with the server's hint. `outcome` says what a refusal left behind."""
    if is_unreachable(error):
        first, *rest = [line.strip() for line in str(error).splitlines() if line.strip()] or [
            "no answer"
        ]
        return Failure(UNREACHABLE, f"database unreachable: {first}", " ".join(rest) or None)
    message = error.diag.message_primary or str(error)
    hint = error.diag.message_hint
    if error.sqlstate in MISSING_OBJECT:
        return _missing(error, message, hint)
    if error.sqlstate == INSUFFICIENT_PRIVILEGE and not hint:
        hint = "the role of --url lacks this privilege: connect as one that has it"
    return Failure(PROBLEMS, f"refused, {outcome}: {message}", hint)


def _hub_failure(error: TaskHubError) -> Failure:
    """A provider error (TaskHub calls): cannot connect (4) or refused (1)."""
    # TaskHub.connect could not open the hub; its URL was checked already.
    cannot_open = isinstance(error, ConfigurationError)
    if cannot_open or (
        error.retryable and (error.sqlstate is None or error.sqlstate.startswith("08"))
    ):
        return Failure(UNREACHABLE, f"database unreachable: {error.message}")
    if error.sqlstate in MISSING_OBJECT:
        return _missing(error, error.message, None)
    hint = "a passing failure: try again" if error.retryable else None
    return Failure(PROBLEMS, f"refused, nothing changed: {error.message}", hint)


# What the runbook's plans refuse as "nothing of that id" (exit 3).
_NONE_SUCH = (InstanceNotFound, DeadLetterNotFound, NoLeaseHeld)
BAD_INPUT = "22023"


def end_on_refusal(error: TaskHubError) -> None:
    """End the verb on a refusal of the runbook's plans, in their words:
    nothing of that id (3), an instance that has ended (1), an argument the
    hub refuses (2). Any other error is the caller's to raise."""
    if isinstance(error, _NONE_SUCH):
        raise Failure(NOT_FOUND, error.message) from None
    if isinstance(error, InstanceEnded | InstanceRunning | StartConflict):
        raise Failure(PROBLEMS, error.message) from None
    if error.sqlstate == BAD_INPUT:
        raise Failure(USAGE, error.message) from None


def failure_of(error: BaseException) -> Failure | None:
    """The exit code and line of an error; None for one we do not expect
    (a bug: its traceback is the useful report)."""
    if isinstance(error, Failure):
        return error
    if isinstance(error, psycopg.Error):
        return database_failure(error)
    if isinstance(error, MigrationRefused):  # each says what was rolled back, or what to do
        return Failure(PROBLEMS, str(error))
    if isinstance(error, MigrationMisused):  # an unknown revision, say
        return Failure(USAGE, f"nothing changed: {error}")
    if isinstance(error, TaskHubError):
        return _hub_failure(error)
    if isinstance(error, OSError):
        return Failure(PROBLEMS, str(error))
    return None
